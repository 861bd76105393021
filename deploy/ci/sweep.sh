#!/bin/sh
# sweep.sh: run nsman sweep once with the options below, write its report to
# NSMAN_REPORT and the job's log, and exit with nsman's exit status. nsman's
# GitHub Action (action.yml) runs this file; its GitLab CI template
# (deploy/ci/nsman.gitlab-ci.yml) holds the same lines. Each option is
# passed to nsman as one argument, never read as shell. The command line it
# prints shows no secret: the values of flags that take a URL (--*-url),
# and any argument that holds ://, as nsman shows such a URL (scheme and
# host), and those of flags that take a file (--*-file, --kubeconfig) as
# <file>.
#
#   NSMAN_INSTALL_DIR  where install.sh put nsman (the same default)
#   NSMAN_NAMESPACE    --namespace: only the managers in this namespace
#                      (default: all namespaces)
#   NSMAN_SELECTOR     --selector: only the managers matching this label
#                      selector
#   NSMAN_DRY_RUN      true (the default) or false: --dry-run, or act
#   NSMAN_OUTPUT       text (the default) or json: --output
#   NSMAN_KUBECONFIG   --kubeconfig (default: $KUBECONFIG, ~/.kube/config or
#                      the in-cluster config)
#   NSMAN_TRUSTED_NAMESPACES
#                      --trusted-namespaces: the namespaces whose managers may
#                      target other namespaces, and where rules may live,
#                      comma-separated (default: none; never the namespace of
#                      the runner's pod, which is not the swept cluster's to
#                      trust). Always passed, and said on stderr
#   NSMAN_ARGS         more flags of nsman sweep, split at white space (no
#                      quoting), after those above; not --trusted-namespaces
#   NSMAN_REPORT       the report's file (default nsman-report.txt, or
#                      nsman-report.json with NSMAN_OUTPUT=json)
#   NSMAN_ARTIFACT     true (the default) or false: false writes the report to
#                      a temporary file outside the working directory, removed
#                      once printed, so that no artifact keeps it (not with
#                      NSMAN_REPORT)
#
# Exit status: nsman's, 0, 1 or 2 (docs/operating.md#exit-codes); 2 also
# when an option above is not one of its values.
set -eu

fail() {
	echo "nsman sweep: $*" >&2
	exit 2
}

# redact_url URL prints URL as nsman shows one that may be a credential (as
# tell.RedactURL does): its scheme and host, then "/…" if it had more; one
# of several lines, which grep would read apart, not at all.
redact_url() {
	case $1 in
	*'
'*)
		echo '(a URL that is not shown)'
		return
		;;
	esac
	rest=${1#*://}
	scheme=${1%%://*}
	authority=${rest%%[/?#]*}
	host=${authority##*@}
	if [ "$rest" = "$1" ] || ! printf '%s\n' "$scheme" | grep -Eq '^[A-Za-z][A-Za-z0-9+.-]*$' ||
		! printf '%s\n' "$host" | grep -Eq '^([A-Za-z0-9._~%-]+|\[[0-9A-Fa-f:.]+\])(:[0-9]*)?$'; then
		echo '(a URL that is not shown)'
	elif [ "$host" = "$authority" ] && { [ "$rest" = "$authority" ] || [ "$rest" = "$authority/" ]; }; then
		echo "$scheme://$host"
	else
		echo "$scheme://$host/…"
	fi
}

bin=${NSMAN_INSTALL_DIR:-${RUNNER_TEMP:-${TMPDIR:-/tmp}}/nsman}/nsman
dry_run=${NSMAN_DRY_RUN:-true}
output=${NSMAN_OUTPUT:-text}
artifact=${NSMAN_ARTIFACT:-true}
case $output in
text) report=${NSMAN_REPORT:-nsman-report.txt} ;;
json) report=${NSMAN_REPORT:-nsman-report.json} ;;
*) fail "NSMAN_OUTPUT is \"$output\": want text or json" ;;
esac
# Commas, and namespace names as Kubernetes spells them: "a, b" is a and
# b, never " b", which would trust nothing that the line below says.
# Blank space goes only around the commas and at either end: "a b",
# or a name a line, is refused, never joined into a name nobody wrote.
trusted=$(printf '%s' "${NSMAN_TRUSTED_NAMESPACES:-}" | tr '\t\r\n' '   ' | sed 's/ *, */,/g; s/^ *//; s/ *$//')
if [ -n "$trusted" ] && ! printf '%s\n' "$trusted" | grep -Eq '^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?(,[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)*$'; then
	fail "NSMAN_TRUSTED_NAMESPACES is \"$NSMAN_TRUSTED_NAMESPACES\": want namespace names, comma-separated"
fi
case $artifact in
true)
	# No report of an earlier sweep may pass for this one's.
	rm -f "$report"
	: >"$report" || fail "cannot write the report to $report"
	;;
false)
	[ -z "${NSMAN_REPORT:-}" ] || fail "NSMAN_REPORT and NSMAN_ARTIFACT=false: give one, not both"
	# Nor may an earlier job's report, left in a directory not cleaned,
	# be kept as this one's artifact.
	rm -f "$report"
	;;
*) fail "NSMAN_ARTIFACT is \"$artifact\": want true or false" ;;
esac

set -- sweep --output "$output"
case $dry_run in
true) set -- "$@" --dry-run ;;
false) ;;
*) fail "NSMAN_DRY_RUN is \"$dry_run\": want true or false" ;;
esac
if [ -n "${NSMAN_NAMESPACE:-}" ]; then
	set -- "$@" --namespace "$NSMAN_NAMESPACE"
fi
if [ -n "${NSMAN_SELECTOR:-}" ]; then
	set -- "$@" --selector "$NSMAN_SELECTOR"
fi
if [ -n "${NSMAN_KUBECONFIG:-}" ]; then
	set -- "$@" --kubeconfig "$NSMAN_KUBECONFIG"
fi
# Always given, so that nsman trusts what is written here and nothing it
# finds: unset, it would trust $POD_NAMESPACE, the runner's pod's.
set -- "$@" --trusted-namespaces="$trusted"
# Split, not globbed: a * in NSMAN_ARGS stays a *.
set -f
# shellcheck disable=SC2086
set -- "$@" ${NSMAN_ARGS:-}
set +f

# The command line as printed: what nsman never prints of its flags is not
# printed here either.
shown=nsman
value=
given=0
for arg; do
	if [ -n "$value" ]; then
		case $value in
		url) arg=$(redact_url "$arg") ;;
		*) arg='<file>' ;;
		esac
		value=
	else
		case $arg in
		--trusted-namespaces | --trusted-namespaces=*) given=$((given + 1)) ;;
		esac
		case $arg in
		--*-url=*) arg=${arg%%=*}=$(redact_url "${arg#*=}") ;;
		--*-file=* | --kubeconfig=*) arg=${arg%%=*}='<file>' ;;
		--*-url) value='url' ;;
		--*-file | --kubeconfig) value='file' ;;
		*://*) arg=$(redact_url "$arg") ;;
		esac
	fi
	shown="$shown $arg"
done
[ "$given" -eq 1 ] || fail "--trusted-namespaces in NSMAN_ARGS: name the trusted namespaces in NSMAN_TRUSTED_NAMESPACES"

[ -x "$bin" ] || fail "$bin is not installed (install.sh installs it)"
if [ -n "$trusted" ]; then
	echo "nsman trusts: $(printf '%s' "$trusted" | sed 's/,/, /g')" >&2
else
	echo "nsman trusts no namespace: managers may target only their own" >&2
fi
echo "$shown" >&2
if [ "$artifact" = false ]; then
	report=$(mktemp "${TMPDIR:-/tmp}/nsman-report.XXXXXX") || fail "cannot create the report's temporary file"
fi
code=0
"$bin" "$@" >"$report" || code=$?
cat "$report"
if [ "$artifact" = false ]; then
	rm -f "$report"
fi
exit "$code"
