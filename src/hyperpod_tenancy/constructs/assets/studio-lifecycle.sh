#!/bin/bash
# Studio lifecycle configuration of a hyperpod-tenancy team (JupyterLab and Code Editor apps).
#
# The team stack writes the HPT_* settings before these comments (hyperpod_tenancy.k8s.onboarding.lifecycle_environment).
# It prepares the terminal so that a Studio user submits work as themselves, with their own Identity Center
# credentials (the cluster refuses work sent as the domain's shared execution role):
#   * ~/.aws/config ($AWS_CONFIG_FILE): an sso-session and a profile (account, permission set as the role);
#     a section that already exists is left as it is;
#   * ~/.hyperpod-tenancy/<profile>.sh and one line in ~/.bashrc sourcing it: the `hyperpod_login` command
#     (aws sso login, then aws eks update-kubeconfig) and a reminder in each new terminal until the
#     kubeconfig has the cluster;
#   * the kubeconfig ($KUBECONFIG or ~/.kube/config), through aws eks update-kubeconfig, which merges one
#     context into it, once the profile has a valid sign-in (on a restart of the app, for instance).
# Running it again changes nothing that is already right. It never runs longer than a few seconds (Studio
# stops a lifecycle script after 5 minutes) and exits 0 unless a required setting is missing.
set -eu

: "${HPT_PROFILE:?}" "${HPT_SSO_SESSION:?}" "${HPT_SSO_REGION:?}" "${HPT_ACCOUNT:?}" "${HPT_ROLE:?}"
: "${HPT_REGION:?}" "${HPT_CLUSTER:?}" "${HPT_NAMESPACE:?}" "${HPT_KUBE_CONTEXT:?}"
HPT_SSO_START_URL="${HPT_SSO_START_URL:-}"
# Studio runs the script as the app's user (sagemaker-user); keep working if HOME is not passed on
HOME="${HOME:-/home/sagemaker-user}"

config="${AWS_CONFIG_FILE:-$HOME/.aws/config}"
kubeconfig="${KUBECONFIG:-$HOME/.kube/config}"
kubeconfig="${kubeconfig%%:*}"
helper_dir="$HOME/.hyperpod-tenancy"
helper="$helper_dir/$HPT_PROFILE.sh"
bashrc="$HOME/.bashrc"
login="aws sso login --profile $HPT_PROFILE"
# a Studio terminal has no browser: the device code flow (AWS CLI 2.22 and later need --use-device-code for it;
# earlier ones use it by default and do not know the option)
login_here="{ $login --use-device-code || $login; }"
kube="aws eks update-kubeconfig --name $HPT_CLUSTER --region $HPT_REGION --profile $HPT_PROFILE --alias $HPT_KUBE_CONTEXT --kubeconfig $kubeconfig"

say() { printf 'hyperpod-tenancy: %s\n' "$*"; }

# Whether the config file has the section [$1].
has_section() { [ -f "$config" ] && grep -qxF "[$1]" "$config"; }

append() {
	mkdir -p "$(dirname "$config")"
	if [ ! -f "$config" ]; then
		(umask 077 && : >"$config")
	fi
	if [ -s "$config" ]; then
		# end the last line, then one blank line between sections
		if [ -n "$(tail -c 1 "$config")" ]; then
			printf '\n' >>"$config"
		fi
		printf '\n' >>"$config"
	fi
	printf '%s\n' "$@" >>"$config"
}

if [ -z "$HPT_SSO_START_URL" ]; then
	say "no AWS access portal URL is configured (cdk.json context hyperpod-tenancy:ssoStartUrl);"
	say "run: aws configure sso --profile $HPT_PROFILE (account $HPT_ACCOUNT, role $HPT_ROLE, region $HPT_SSO_REGION)"
else
	if has_section "sso-session $HPT_SSO_SESSION"; then
		say "$config already has [sso-session $HPT_SSO_SESSION]: left as it is"
	else
		append "[sso-session $HPT_SSO_SESSION]" \
			"sso_start_url = $HPT_SSO_START_URL" \
			"sso_region = $HPT_SSO_REGION" \
			"sso_registration_scopes = sso:account:access"
		say "added [sso-session $HPT_SSO_SESSION] to $config"
	fi
	if has_section "profile $HPT_PROFILE"; then
		say "$config already has [profile $HPT_PROFILE]: left as it is"
	else
		append "[profile $HPT_PROFILE]" \
			"sso_session = $HPT_SSO_SESSION" \
			"sso_account_id = $HPT_ACCOUNT" \
			"sso_role_name = $HPT_ROLE" \
			"region = $HPT_REGION"
		say "added [profile $HPT_PROFILE] to $config"
	fi
fi

