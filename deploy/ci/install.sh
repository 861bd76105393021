#!/bin/sh
# install.sh: download the nsman release binary NSMAN_VERSION for this
# machine's OS and architecture into NSMAN_INSTALL_DIR, after checking its
# SHA-256 against the release's checksums.txt, and against NSMAN_SHA256 when
# set. nsman's GitHub Action (action.yml) runs this file; its GitLab CI
# template (deploy/ci/nsman.gitlab-ci.yml) holds the same lines.
#
#   NSMAN_VERSION       the release tag, vX.Y.Z (required: no "latest", so
#                       that a pipeline runs the same binary every time)
#   NSMAN_DOWNLOAD_URL  where releases are downloaded from, as
#                       BASE/vX.Y.Z/nsman-OS-ARCH and BASE/vX.Y.Z/checksums.txt
#                       (default https://github.com/nsman/nsman/releases/download;
#                       another is shown as its scheme and host alone, as nsman
#                       shows a URL that may hold a credential)
#   NSMAN_SHA256        the SHA-256 the binary must have, 64 hex digits
#                       (default: none). checksums.txt comes from where the
#                       binary does: it finds a damaged download, not a forged
#                       one; this pin, written in the pipeline, finds both
#   NSMAN_INSTALL_DIR   where nsman goes (default $RUNNER_TEMP/nsman, else
#                       $TMPDIR/nsman, else /tmp/nsman)
#
# It needs curl or wget, and sha256sum or shasum. Exit status: 0 when
# NSMAN_INSTALL_DIR/nsman is the verified binary; 2, saying why, when it is
# not (a bad version or pin, no binary for this machine, a download that
# failed, a checksum that is missing or does not match, or a binary that is
# not the one pinned): nsman's code for a sweep that could not run.
set -eu

# No trap cleans up: in GitLab CI this runs in the job's own shell, whose
# traps are the runner's.
tmp=
fail() {
	echo "nsman install: $*; nsman is not installed" >&2
	if [ -n "$tmp" ]; then
		rm -rf "$tmp"
	fi
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

version=${NSMAN_VERSION:-}
github=https://github.com/nsman/nsman/releases/download
base=${NSMAN_DOWNLOAD_URL:-$github}
shown=$base
if [ "$base" != "$github" ]; then
	shown=$(redact_url "$base")
fi
pin=$(printf '%s' "${NSMAN_SHA256:-}" | tr 'A-F' 'a-f')
dir=${NSMAN_INSTALL_DIR:-${RUNNER_TEMP:-${TMPDIR:-/tmp}}/nsman}

# One line, a tag as releases are tagged: the version goes into a URL.
case $version in
*'
'*) fail "NSMAN_VERSION holds several lines" ;;
esac
printf '%s\n' "$version" | grep -Eq '^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$' ||
	fail "NSMAN_VERSION is \"$version\": want a release tag such as v1.2.3"
case $pin in
*[!0-9a-f]*) fail "NSMAN_SHA256 is \"$NSMAN_SHA256\": want the binary's SHA-256, 64 hex digits" ;;
esac
if [ -n "$pin" ] && [ ${#pin} -ne 64 ]; then
	fail "NSMAN_SHA256 is \"$NSMAN_SHA256\": want the binary's SHA-256, 64 hex digits"
fi

case $(uname -s) in
Linux) os=linux ;;
Darwin) os=darwin ;;
*) fail "no release binary for $(uname -s)" ;;
esac
case $(uname -m) in
x86_64 | amd64) arch=amd64 ;;
aarch64 | arm64) arch=arm64 ;;
*) fail "no release binary for $(uname -m)" ;;
esac
asset=nsman-$os-$arch

# download URL FILE
download() {
	if command -v curl >/dev/null 2>&1; then
		curl -fsSL --retry 3 -o "$2" "$1"
	elif command -v wget >/dev/null 2>&1; then
		wget -q -O "$2" "$1"
	else
		fail "neither curl nor wget is installed"
	fi
}

# sha256 FILE prints the file's SHA-256 in hex.
sha256() {
	if command -v sha256sum >/dev/null 2>&1; then
		sha256sum "$1" | cut -d ' ' -f 1
	elif command -v shasum >/dev/null 2>&1; then
		shasum -a 256 "$1" | cut -d ' ' -f 1
	else
		fail "neither sha256sum nor shasum is installed"
	fi
}

mkdir -p "$dir" || fail "cannot create $dir"
tmp=$(mktemp -d "$dir/.download.XXXXXX") || fail "cannot create a directory in $dir"
echo "nsman install: $shown/$version/$asset" >&2
download "$base/$version/checksums.txt" "$tmp/checksums.txt" || fail "cannot download $shown/$version/checksums.txt"
download "$base/$version/$asset" "$tmp/$asset" || fail "cannot download $shown/$version/$asset"

# checksums.txt is sha256sum's output: HASH, two spaces (or a space and a
# *), the file name. Exactly one line must name the binary.
want=$(awk -v f="$asset" '$2 == f || $2 == "*" f { print $1 }' "$tmp/checksums.txt")
case $want in
'') fail "checksums.txt of $version has no line for $asset" ;;
*'
'*) fail "checksums.txt of $version has several lines for $asset" ;;
esac
got=$(sha256 "$tmp/$asset")
[ "$got" = "$want" ] || fail "$asset of $version has SHA-256 $got, but checksums.txt says $want"
if [ -n "$pin" ] && [ "$got" != "$pin" ]; then
	fail "$asset of $version has SHA-256 $got, but NSMAN_SHA256 pins $pin"
fi

chmod 0755 "$tmp/$asset"
mv -f "$tmp/$asset" "$dir/nsman"
rm -rf "$tmp"
"$dir/nsman" version || fail "$dir/nsman does not run"
