# The control plane under the cluster tests (tests/support/control_plane.py): etcd, kube-apiserver,
# kube-controller-manager, kube-scheduler, the Kueue manager, KWOK and kubectl, each built with `go build` from the Go
# module proxy at a pinned version (no release downloads, no container images), and the CRDs of the operators
# the platform renders objects for, read from their Go modules at the versions the platform pins.
#
# Everything lands in a cache outside the checkout, one folder per component and version (and per go.sum of a
# wrapper module), so a second `make test` builds nothing and a version bump builds only what changed. A fresh
# machine builds them inside `make test`: docs/testing.md has the cold and warm figures.
GO ?= go
# the including Makefile's default goal stays its own (restored at the end)
CONTROL_PLANE_SAVED_GOAL := $(.DEFAULT_GOAL)
#: kube-apiserver, kube-controller-manager, kube-scheduler (k8s.io/kubernetes, through tools/k8s/go.mod)
K8S_VERSION := 1.34.4
#: etcd (go.etcd.io/etcd/server/v3, through tools/etcd/go.mod)
ETCD_VERSION := 3.6.17
#: the Kueue manager, its CRDs, webhook configuration and RBAC (the version Task Governance v1.6.0 packages)
KUEUE_VERSION := 0.19.2
#: kustomize, which renders Kueue's release manifests from its config/ folder
KUSTOMIZE_VERSION := 5.8.2
#: KWOK, fake nodes that the scheduler binds pods to, and its stages (what a node and a pod go through)
KWOK_VERSION := 0.8.0
#: CRDs only: KubeRay's (the kuberay-operator chart the platform pins) and cert-manager's (the HyperPod chart's)
KUBERAY_VERSION := 1.4.2
CERT_MANAGER_VERSION := 1.18.2
#: CRDs only: Kubeflow's TFJob, XGBoostJob and PaddleJob (the last v1 training operator; its PyTorchJob and the
#: MPI operator's MPIJob come from the HyperPod chart, in shared/operator-crds)
TRAINING_OPERATOR_VERSION := 1.8.1

CONTROL_PLANE_CACHE ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/hyperpod-tenancy/control-plane
# a wrapper module's go.mod and go.sum pin the staging modules: a change to them is a new build
wrapper_sum = $(shell cat tools/$(1)/go.mod tools/$(1)/go.sum 2>/dev/null | sha256sum | cut -c1-12)
K8S_DIR := $(CONTROL_PLANE_CACHE)/kubernetes-v$(K8S_VERSION)-$(call wrapper_sum,k8s)
ETCD_DIR := $(CONTROL_PLANE_CACHE)/etcd-v$(ETCD_VERSION)-$(call wrapper_sum,etcd)
KUEUE_DIR := $(CONTROL_PLANE_CACHE)/kueue-v$(KUEUE_VERSION)-kustomize-v$(KUSTOMIZE_VERSION)
KWOK_DIR := $(CONTROL_PLANE_CACHE)/kwok-v$(KWOK_VERSION)
KUBECTL_DIR := $(CONTROL_PLANE_CACHE)/kubectl-v$(K8S_VERSION)-$(call wrapper_sum,kubectl)
OPERATOR_CRDS_DIR := $(CONTROL_PLANE_CACHE)/crds-kuberay-v$(KUBERAY_VERSION)-cert-manager-v$(CERT_MANAGER_VERSION)-training-operator-v$(TRAINING_OPERATOR_VERSION)
CONTROL_PLANE := $(K8S_DIR)/.built $(ETCD_DIR)/.built $(KUEUE_DIR)/.built $(KWOK_DIR)/.built $(OPERATOR_CRDS_DIR)/.built \
	$(KUBECTL_DIR)/.built

# The variables the test fixture reads (tests/support/control_plane.py names each one).
CONTROL_PLANE_ENV := KUBE_BIN_DIR=$(K8S_DIR) ETCD_BIN_DIR=$(ETCD_DIR) KUEUE_DIR=$(KUEUE_DIR) KWOK_BIN_DIR=$(KWOK_DIR) \
	OPERATOR_CRDS_DIR=$(OPERATOR_CRDS_DIR) KUBERNETES_VERSION=v$(K8S_VERSION) KUBECTL=$(KUBECTL_DIR)/kubectl

GO_MISSING := go not found: the cluster tests build kube-apiserver, etcd and Kueue from Go modules; install Go 1.26 or later and put its go command on PATH
go_check = command -v $(GO) >/dev/null || { echo "$(GO_MISSING)"; exit 1; }
# the builds run in a temporary folder beside the target, renamed when complete: an interrupted build leaves
# nothing that looks built
GO_ENV := CGO_ENABLED=0 GOFLAGS=-buildvcs=false
# upstream's hack/lib/version.sh sets these; Kueue refuses a server version it cannot parse
k8s_version_flags = $(foreach p,k8s.io/component-base/version k8s.io/client-go/pkg/version,\
	-X $(p).gitVersion=v$(K8S_VERSION) -X $(p).gitMajor=$(word 1,$(subst ., ,$(K8S_VERSION))) \
	-X $(p).gitMinor=$(word 2,$(subst ., ,$(K8S_VERSION))) -X $(p).gitTreeState=clean \
	-X $(p).buildDate=1970-01-01T00:00:00Z)
MODULE_DIR = $$($(GO) env GOMODCACHE)/$(1)@v$(2)

.PHONY: control-plane

control-plane: $(CONTROL_PLANE)
	@echo "control plane: $(CONTROL_PLANE_ENV)" | tr ' ' '\n' | sed '2,$$s/^/  /'

$(K8S_DIR)/.built:
	@$(go_check)
	@echo "==> kube-apiserver, kube-controller-manager, kube-scheduler v$(K8S_VERSION): go build (the first time only; minutes)"
	rm -rf $(K8S_DIR).tmp && mkdir -p $(K8S_DIR).tmp
	cd tools/k8s && $(GO_ENV) $(GO) build -mod=readonly -ldflags "-s -w $(k8s_version_flags)" \
		-o $(K8S_DIR).tmp/ k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
		k8s.io/kubernetes/cmd/kube-scheduler
	touch $(K8S_DIR).tmp/.built && rm -rf $(K8S_DIR) && mv $(K8S_DIR).tmp $(K8S_DIR)

# kubectl, the client team members use (the tests run the commands onboarding prints), at the same version
$(KUBECTL_DIR)/.built:
	@$(go_check)
	@echo "==> kubectl v$(K8S_VERSION): go build"
	rm -rf $(KUBECTL_DIR).tmp && mkdir -p $(KUBECTL_DIR).tmp
	cd tools/kubectl && $(GO_ENV) $(GO) build -mod=readonly -ldflags "-s -w $(k8s_version_flags)" \
		-o $(KUBECTL_DIR).tmp/kubectl .
	touch $(KUBECTL_DIR).tmp/.built && rm -rf $(KUBECTL_DIR) && mv $(KUBECTL_DIR).tmp $(KUBECTL_DIR)

$(ETCD_DIR)/.built:
	@$(go_check)
	@echo "==> etcd v$(ETCD_VERSION): go build"
	rm -rf $(ETCD_DIR).tmp && mkdir -p $(ETCD_DIR).tmp
	cd tools/etcd && $(GO_ENV) $(GO) build -mod=readonly -ldflags "-s -w" -o $(ETCD_DIR).tmp/etcd \
		go.etcd.io/etcd/server/v3
	touch $(ETCD_DIR).tmp/.built && rm -rf $(ETCD_DIR) && mv $(ETCD_DIR).tmp $(ETCD_DIR)

# the manager, and from the same module version the release's manifests: `kustomize build config/default` (as
# upstream's release does), with the CRDs, their conversion webhooks, the webhook configurations and the RBAC
$(KUEUE_DIR)/.built:
	@$(go_check)
	@echo "==> Kueue v$(KUEUE_VERSION): go build, and its manifests (kustomize build config/default)"
	rm -rf $(KUEUE_DIR).tmp && mkdir -p $(KUEUE_DIR).tmp
	$(GO_ENV) GOBIN=$(KUEUE_DIR).tmp $(GO) install \
		-ldflags "-s -w -X sigs.k8s.io/kueue/pkg/version.GitVersion=v$(KUEUE_VERSION)" \
		sigs.k8s.io/kueue/cmd/kueue@v$(KUEUE_VERSION)
	cp -r --no-preserve=mode $(call MODULE_DIR,sigs.k8s.io/kueue,$(KUEUE_VERSION))/config $(KUEUE_DIR).tmp/config
	$(GO_ENV) GOBIN=$(KUEUE_DIR).tmp/kustomize $(GO) install sigs.k8s.io/kustomize/kustomize/v5@v$(KUSTOMIZE_VERSION)
	$(KUEUE_DIR).tmp/kustomize/kustomize build $(KUEUE_DIR).tmp/config/default > $(KUEUE_DIR).tmp/manifests.yaml
	rm -rf $(KUEUE_DIR).tmp/kustomize
	touch $(KUEUE_DIR).tmp/.built && rm -rf $(KUEUE_DIR) && mv $(KUEUE_DIR).tmp $(KUEUE_DIR)

$(KWOK_DIR)/.built:
	@$(go_check)
	@echo "==> KWOK v$(KWOK_VERSION): go build, and its stages (kustomize/stage)"
	rm -rf $(KWOK_DIR).tmp && mkdir -p $(KWOK_DIR).tmp
	$(GO_ENV) GOBIN=$(KWOK_DIR).tmp $(GO) install -ldflags "-s -w" sigs.k8s.io/kwok/cmd/kwok@v$(KWOK_VERSION)
	cp -r --no-preserve=mode $(call MODULE_DIR,sigs.k8s.io/kwok,$(KWOK_VERSION))/kustomize/stage $(KWOK_DIR).tmp/stages
	touch $(KWOK_DIR).tmp/.built && rm -rf $(KWOK_DIR) && mv $(KWOK_DIR).tmp $(KWOK_DIR)

# CRDs only, from the modules' source (go mod download: no build)
$(OPERATOR_CRDS_DIR)/.built:
	@$(go_check)
	@echo "==> KubeRay v$(KUBERAY_VERSION), cert-manager v$(CERT_MANAGER_VERSION) and training-operator v$(TRAINING_OPERATOR_VERSION) CRDs: go mod download"
	rm -rf $(OPERATOR_CRDS_DIR).tmp && mkdir -p $(OPERATOR_CRDS_DIR).tmp/kuberay $(OPERATOR_CRDS_DIR).tmp/cert-manager \
		$(OPERATOR_CRDS_DIR).tmp/training-operator
	cd $(OPERATOR_CRDS_DIR).tmp && $(GO) mod download github.com/ray-project/kuberay/ray-operator@v$(KUBERAY_VERSION) \
		github.com/cert-manager/cert-manager@v$(CERT_MANAGER_VERSION) \
		github.com/kubeflow/training-operator@v$(TRAINING_OPERATOR_VERSION)
	cp --no-preserve=mode $(foreach k,tfjobs xgboostjobs paddlejobs,$(call MODULE_DIR,github.com/kubeflow/training-operator,$(TRAINING_OPERATOR_VERSION))/manifests/base/crds/kubeflow.org_$(k).yaml) \
		$(OPERATOR_CRDS_DIR).tmp/training-operator/
	cp --no-preserve=mode $(call MODULE_DIR,github.com/ray-project/kuberay/ray-operator,$(KUBERAY_VERSION))/config/crd/bases/*.yaml \
		$(OPERATOR_CRDS_DIR).tmp/kuberay/
	cp --no-preserve=mode $(call MODULE_DIR,github.com/cert-manager/cert-manager,$(CERT_MANAGER_VERSION))/deploy/crds/*.yaml \
		$(OPERATOR_CRDS_DIR).tmp/cert-manager/
	touch $(OPERATOR_CRDS_DIR).tmp/.built && rm -rf $(OPERATOR_CRDS_DIR) && mv $(OPERATOR_CRDS_DIR).tmp $(OPERATOR_CRDS_DIR)

.DEFAULT_GOAL := $(CONTROL_PLANE_SAVED_GOAL)
