# The terminal's helper: ours alone, rewritten on every start.
mkdir -p "$helper_dir"
cat >"$helper.tmp" <<EOF
# Written by the hyperpod-tenancy Studio lifecycle configuration; rewritten when the app starts.
hyperpod_login() {
	$login_here && $kube
}
if ! grep -qs 'name: $HPT_KUBE_CONTEXT\$' '$kubeconfig'; then
	echo "hyperpod-tenancy: run hyperpod_login to sign in as yourself and reach $HPT_CLUSTER (namespace $HPT_NAMESPACE)"
fi
EOF
mv "$helper.tmp" "$helper"
source_line="[ -r \"$helper\" ] && . \"$helper\""
if ! grep -qsxF "$source_line" "$bashrc"; then
	printf '%s\n' "$source_line" >>"$bashrc"
fi

if grep -qs "name: $HPT_KUBE_CONTEXT\$" "$kubeconfig"; then
	say "$kubeconfig already has context $HPT_KUBE_CONTEXT"
elif [ -n "$HPT_SSO_START_URL" ] && aws sts get-caller-identity --profile "$HPT_PROFILE" >/dev/null 2>&1; then
	mkdir -p "$(dirname "$kubeconfig")"
	aws eks update-kubeconfig --name "$HPT_CLUSTER" --region "$HPT_REGION" --profile "$HPT_PROFILE" \
		--alias "$HPT_KUBE_CONTEXT" --kubeconfig "$kubeconfig" >/dev/null
	say "added context $HPT_KUBE_CONTEXT to $kubeconfig"
else
	say "next, in a terminal: hyperpod_login (that is: $login && $kube)"
fi
