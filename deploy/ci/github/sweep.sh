#!/bin/sh
# The sweep step of nsman's GitHub Action (action.yml): deploy/ci/sweep.sh,
# then its exit status and the report's path as the step's outputs
# exit-code and report, and the report in the job's summary unless
# NSMAN_SUMMARY is false (the summary, as the log, is for anyone who may
# read the workflow run). It exits with nsman's exit status; with 2, and
# no summary, when NSMAN_SUMMARY is neither true nor false.
set -eu

case ${NSMAN_OUTPUT:-text} in
json) NSMAN_REPORT=${NSMAN_REPORT:-nsman-report.json} ;;
*) NSMAN_REPORT=${NSMAN_REPORT:-nsman-report.txt} ;;
esac
case $NSMAN_REPORT in
/*) ;;
*) NSMAN_REPORT=$PWD/$NSMAN_REPORT ;;
esac
export NSMAN_REPORT
rm -f "$NSMAN_REPORT"

code=0
summary=${NSMAN_SUMMARY:-true}
case $summary in
true | false) "$(dirname "$0")/../sweep.sh" || code=$? ;;
*)
	echo "nsman sweep: NSMAN_SUMMARY is \"$summary\": want true or false" >&2
	code=2
	summary=false
	;;
esac

case $code in
0) meaning='every attempted action succeeded, or none was due' ;;
1) meaning='at least one manager failed; it stays active and the next sweep retries it' ;;
2) meaning='the sweep could not run; the log says why' ;;
*) meaning='an exit status nsman does not use' ;;
esac
mode=
if [ "${NSMAN_DRY_RUN:-true}" = true ]; then
	mode=' (dry run)'
fi

{
	echo "exit-code=$code"
	echo "report=$NSMAN_REPORT"
} >>"$GITHUB_OUTPUT"

if [ "$summary" = false ]; then
	exit "$code"
fi

# The report goes in a code block whose fence is longer than any run of
# backticks in it: names and messages in the report are tenants' to choose,
# and must not end the block.
{
	echo "### nsman sweep$mode: exit $code"
	echo
	echo "$meaning."
	if [ -s "$NSMAN_REPORT" ]; then
		fence=$(tr -cs '`' '\n' <"$NSMAN_REPORT" | awk '{ if (length > n) n = length } END { n = (n < 3) ? 3 : n + 1; while (n--) printf "`" }')
		echo
		echo "$fence${NSMAN_OUTPUT:-text}"
		awk 1 "$NSMAN_REPORT"
		echo "$fence"
	fi
} >>"$GITHUB_STEP_SUMMARY"

exit "$code"
