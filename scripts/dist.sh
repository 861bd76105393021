#!/usr/bin/env bash
# dist.sh REPO TAG DIR: pack each release binary DIR/nsman-OS-ARCH into
# DIR/nsman_VERSION_OS_ARCH.tar.gz (VERSION is TAG without its v), which
# holds the binary as nsman (mode 0755), LICENSE and README.md; add each
# archive's SHA-256 to DIR/checksums.txt; and render the krew manifest
# deploy/krew/nsman.yaml into DIR/nsman.yaml, its URLs those of the GitHub
# release TAG of REPO (owner/name), its sha256 the archives'. The release
# workflow runs it after building the binaries and uploads DIR
# (docs/release.md); go test ./deploy/ runs it on stand-ins.
#
# The archives are reproducible: entries sorted, owned by 0:0, dated
# SOURCE_DATE_EPOCH (else the commit's time), gzip without a name or time.
# It needs GNU tar, as on the release's runner.
#
# Exit status: 0; 1, saying why on stderr, when a binary is missing or the
# manifest names a platform no binary was built for, or the reverse; 2 on
# a usage error.
set -euo pipefail

me=${0##*/}
if [ $# -ne 3 ] || ! [[ $1 =~ ^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$ ]] || ! [[ $2 =~ ^v[0-9] ]]; then
	echo "usage: $me OWNER/NAME vX.Y.Z[-PRERELEASE] DIR" >&2
	exit 2
fi
repo=$1 tag=$2 dir=$3
version=${tag#v}
top=$(cd "$(dirname "$0")/.." && pwd)
template=$top/deploy/krew/nsman.yaml
epoch=${SOURCE_DATE_EPOCH:-$(git -C "$top" log -1 --format=%ct)}

fail() {
	echo "$me: $*" >&2
	exit 1
}

shopt -s nullglob
binaries=("$dir"/nsman-*-*)
[ ${#binaries[@]} -gt 0 ] || fail "no binary nsman-OS-ARCH in $dir"
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
# The template's comments say how it is filled: the manifest leaves them.
manifest=$(sed -e '/^#/d' -e "s|@TAG@|$tag|g" -e "s|@VERSION@|$version|g" -e "s|@REPO@|$repo|g" "$template")

for bin in "${binaries[@]}"; do
	platform=${bin##*/nsman-}
	os=${platform%-*} arch=${platform#*-}
	archive=nsman_${version}_${os}_${arch}.tar.gz
	rm -rf "$stage/files" && mkdir "$stage/files"
	install -m 0755 "$bin" "$stage/files/nsman"
	install -m 0644 "$top/LICENSE" "$top/README.md" "$stage/files/"
	tar -C "$stage/files" --sort=name --owner=0 --group=0 --numeric-owner \
		--mtime="@$epoch" --format=ustar -cf - nsman LICENSE README.md |
		gzip -n -9 >"$dir/$archive"
	sum=$(sha256sum "$dir/$archive")
	sum=${sum%% *}
	grep -q "@SHA256_${os}_${arch}@" <<<"$manifest" ||
		fail "deploy/krew/nsman.yaml has no platform $os/$arch, for which $bin was built"
	manifest=${manifest//@SHA256_${os}_${arch}@/$sum}
	(cd "$dir" && sha256sum "$archive") >>"$dir/checksums.txt"
done

if left=$(grep -o '@[A-Za-z0-9_]*@' <<<"$manifest"); then
	fail "deploy/krew/nsman.yaml names what no binary was built for: $(tr '\n' ' ' <<<"$left")"
fi
printf '%s\n' "$manifest" >"$dir/nsman.yaml"
echo "$dir: ${#binaries[@]} archives, their checksums in checksums.txt, the krew manifest nsman.yaml"
