# The cluster lives in another account ($HPT_CLUSTER_ACCOUNT) than the one members sign in to, where
# `aws eks update-kubeconfig` cannot describe it with the member's profile. The app's own credentials (the
# domain's execution role) describe it through $HPT_CLUSTER_ROLE, which may do nothing else; the context goes to a
# kubeconfig file of its own, whose user is the member (`aws eks get-token` with their profile), and each terminal
# adds that file to KUBECONFIG, after the default one.
: "${HPT_CLUSTER_ACCOUNT:?}" "${HPT_CLUSTER_ROLE:?}" "${HPT_KUBE_USER:?}"
team_kubeconfig="$(dirname "$kubeconfig")/$HPT_KUBE_CONTEXT.yaml"
: "$kube" # not run here: with the member's profile it describes the cluster in the member's account

# The terminal's helper: ours alone, rewritten on every start.
mkdir -p "$helper_dir"
cat >"$helper.tmp" <<EOF
# Written by the hyperpod-tenancy Studio lifecycle configuration; rewritten when the app starts.
hyperpod_kubeconfig() {
	local key secret token endpoint ca
	# the app's own credentials, whatever profile the terminal has selected
	read -r key secret token < <(env -u AWS_PROFILE -u AWS_DEFAULT_PROFILE aws sts assume-role \\
		--role-arn '$HPT_CLUSTER_ROLE' --role-session-name hyperpod-kubeconfig --duration-seconds 900 \\
		--query 'Credentials.[AccessKeyId,SecretAccessKey,SessionToken]' --output text)
	read -r endpoint ca < <(AWS_ACCESS_KEY_ID="\$key" AWS_SECRET_ACCESS_KEY="\$secret" AWS_SESSION_TOKEN="\$token" \\
		env -u AWS_PROFILE -u AWS_DEFAULT_PROFILE aws eks describe-cluster --name '$HPT_CLUSTER' --region '$HPT_REGION' \\
		--query 'cluster.[endpoint,certificateAuthority.data]' --output text)
	if [ -z "\$endpoint" ] || [ -z "\$ca" ]; then
		echo "hyperpod-tenancy: cannot describe $HPT_CLUSTER in $HPT_CLUSTER_ACCOUNT through $HPT_CLUSTER_ROLE" >&2
		return 1
	fi
	mkdir -p '$(dirname "$team_kubeconfig")'
	(umask 077 && cat >'$team_kubeconfig.tmp' <<KUBECONFIG
apiVersion: v1
kind: Config
clusters:
- name: $HPT_KUBE_CONTEXT
  cluster:
    server: \$endpoint
    certificate-authority-data: \$ca
contexts:
- name: $HPT_KUBE_CONTEXT
  context:
    cluster: $HPT_KUBE_CONTEXT
    user: $HPT_KUBE_USER
    namespace: $HPT_NAMESPACE
users:
- name: $HPT_KUBE_USER
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1beta1
      command: aws
      args: [--region, $HPT_REGION, eks, get-token, --cluster-name, $HPT_CLUSTER, --output, json]
      env:
      - name: AWS_PROFILE
        value: $HPT_PROFILE
      interactiveMode: Never
current-context: $HPT_KUBE_CONTEXT
KUBECONFIG
	) && mv '$team_kubeconfig.tmp' '$team_kubeconfig'
}
hyperpod_login() {
	$login_here && hyperpod_kubeconfig
}
case ":\${KUBECONFIG:-}:" in
*':$team_kubeconfig:'*) ;;
*) export KUBECONFIG="\${KUBECONFIG:-\$HOME/.kube/config}:$team_kubeconfig" ;;
esac
if [ ! -s '$team_kubeconfig' ]; then
	echo "hyperpod-tenancy: run hyperpod_login to sign in as yourself and reach $HPT_CLUSTER (namespace $HPT_NAMESPACE)"
fi
EOF
mv "$helper.tmp" "$helper"
source_line="[ -r \"$helper\" ] && . \"$helper\""
if ! grep -qsxF "$source_line" "$bashrc"; then
	printf '%s\n' "$source_line" >>"$bashrc"
fi

if [ -s "$team_kubeconfig" ]; then
	say "$team_kubeconfig already has context $HPT_KUBE_CONTEXT"
elif [ -n "$HPT_SSO_START_URL" ] && aws sts get-caller-identity --profile "$HPT_PROFILE" >/dev/null 2>&1; then
	# shellcheck disable=SC1090 # the helper written above
	if (. "$helper" >/dev/null && hyperpod_kubeconfig); then
		say "wrote context $HPT_KUBE_CONTEXT to $team_kubeconfig"
	else
		say "could not describe $HPT_CLUSTER yet; in a terminal: hyperpod_kubeconfig"
	fi
else
	say "next, in a terminal: hyperpod_login (that is: $login, then hyperpod_kubeconfig)"
fi
