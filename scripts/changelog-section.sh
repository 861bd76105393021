#!/usr/bin/env bash
# changelog-section.sh [-b BASE_URL] VERSION [FILE]: print what
# CHANGELOG.md (or FILE) says of the release VERSION (X.Y.Z, without the
# tag's v): the lines under its heading "## [VERSION] - YYYY-MM-DD", up to
# the next "## [" heading or the link definitions that end a Keep a
# Changelog file, blank lines at either end left out. With -b, relative
# links (docs/operating.md#holds) are made absolute under BASE_URL, since
# a release's notes are not read beside the files they link. The release
# workflow checks with it that a tag has a section before anything is
# published, and puts the section at the top of the release's notes
# (docs/release.md).
#
# Exit status: 0 with the section on stdout; 1, saying why on stderr, when
# VERSION is Unreleased, has no section or several, its heading has no
# date, or its section is empty; 2 on a usage error.
set -euo pipefail

me=${0##*/}
base=
while getopts b: opt; do
	case $opt in
	b) base=${OPTARG%/} ;;
	*)
		echo "usage: $me [-b BASE_URL] VERSION [FILE]" >&2
		exit 2
		;;
	esac
done
shift $((OPTIND - 1))
case $base in
*[!A-Za-z0-9:/._~%+-]*)
	echo "$me: -b $base: want a URL of letters, digits and :/._~%+-" >&2
	exit 2
	;;
esac
if [ $# -lt 1 ] || [ $# -gt 2 ] || [ -z "$1" ]; then
	echo "usage: $me [-b BASE_URL] VERSION [FILE]" >&2
	exit 2
fi
version=$1
file=${2:-CHANGELOG.md}

case $version in
v[0-9]*)
	echo "$me: $version: give the version without its v (${version#v}), as in the section's heading" >&2
	exit 2
	;;
esac
if [ "$(printf '%s' "$version" | tr '[:upper:]' '[:lower:]')" = unreleased ]; then
	echo "$me: Unreleased is not a release: move its entries into a section '## [X.Y.Z] - YYYY-MM-DD' first (docs/release.md)" >&2
	exit 1
fi
if [ ! -r "$file" ]; then
	echo "$me: cannot read $file" >&2
	exit 2
fi

# awk prints the section and exits 3 when there is none, 4 when there are
# several, 5 when its heading has no date, 6 when it is empty. Versions are
# compared as strings, not as patterns: 1.2.3 is not 1.2.30, nor 1x2x3.
status=0
section=$(awk -v version="$version" '
	function heading_version(line, rest) {
		rest = substr(line, 5)
		return substr(rest, 1, index(rest, "]") - 1)
	}
	/^## \[/ {
		inside = 0
		if (heading_version($0) == version) {
			found++
			inside = 1
			heading = $0
		}
		next
	}
	/^\[[^]]*\]: / { inside = 0 }
	inside { lines[++n] = $0 }
	END {
		if (found == 0) exit 3
		if (found > 1) exit 4
		if (heading !~ /^## \[[^]]*\] - [0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]$/) exit 5
		first = 1
		while (first <= n && lines[first] ~ /^[ \t]*$/) first++
		last = n
		while (last >= first && lines[last] ~ /^[ \t]*$/) last--
		if (first > last) exit 6
		for (i = first; i <= last; i++) print lines[i]
	}
' "$file") || status=$?

case $status in
0)
	if [ -n "$base" ]; then
		# A link target without a scheme, an anchor or a leading / is
		# relative to the repository's top directory.
		section=$(printf '%s\n' "$section" | sed -E "s|\]\(([A-Za-z0-9_.-][^):]*)\)|](${base}/\1)|g")
	fi
	printf '%s\n' "$section"
	;;
3) echo "$me: $file has no section for $version: move the entries under '## [Unreleased]' into '## [$version] - YYYY-MM-DD' before tagging v$version (docs/release.md)" >&2 ;;
4) echo "$me: $file has more than one section for $version" >&2 ;;
5) echo "$me: $file: the heading of $version must be '## [$version] - YYYY-MM-DD', the release's date" >&2 ;;
6) echo "$me: $file: the section for $version says nothing" >&2 ;;
*) echo "$me: reading $file failed" >&2 ;;
esac
if [ "$status" -ne 0 ]; then
	exit 1
fi
