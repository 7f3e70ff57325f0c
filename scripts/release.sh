#!/usr/bin/env bash
# Makes a release archive of `herald` for Linux that needs no Swift on the server:
#
#   dist/herald-<version>-linux-<arch>.tar.gz        bin/herald (Swift's runtime linked in),
#   dist/herald-<version>-linux-<arch>.tar.gz.sha256 README.md, docs/install.md, the systemd
#                                                    unit and an example configuration
#
# Usage: scripts/release.sh [--ref COMMIT | --worktree] [--version V] [--arch ARCH] [--out DIR] [--no-strip]
#
#   --ref COMMIT  the commit to build (default HEAD), exported with `git archive` into
#                 .build-release-src: uncommitted changes never reach a release. Package.resolved
#                 is not in git; the working tree's is copied beside the export.
#   --worktree    build the working tree as it is instead (version marked -dirty if it is)
#   --version V   defaults to `git describe --always` of what is built
#   --arch ARCH   x86_64 or aarch64 (arm64); defaults to `uname -m`. Another arch than this
#                 machine's needs a Swift SDK for it (`swift sdk list`); without one the script
#                 says so and stops.
#   --out DIR     where the archive goes (default: dist)
#   --no-strip    keep the symbols (larger; for crash reports with names)
#
# The build uses its own scratch directory (.build-release), never the default .build.
# With a static Linux SDK (musl) installed, the binary is fully static; without one, Swift's
# runtime and Foundation are linked in (--static-swift-stdlib) and the binary needs only glibc,
# libstdc++ and libgcc_s from the system (docs/install.md lists them). scripts/check-release.sh
# proves an archive runs without Swift.
set -euo pipefail

cd "$(dirname "$0")/.."
root=$(pwd)

version=""
ref=HEAD
worktree=0
arch=$(uname -m)
out=dist
strip_binary=1
while [ $# -gt 0 ]; do
    case "$1" in
        --ref) ref=${2:?--ref needs a commit}; shift 2 ;;
        --worktree) worktree=1; shift ;;
        --version) version=${2:?--version needs a value}; shift 2 ;;
        --arch) arch=${2:?--arch needs a value}; shift 2 ;;
        --out) out=${2:?--out needs a value}; shift 2 ;;
        --no-strip) strip_binary=0; shift ;;
        -h|--help) sed -n '2,/^set -e/p' "$0" | grep '^#' | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "release.sh: unknown argument: $1 (see --help)" >&2; exit 2 ;;
    esac
done

case "$arch" in
    x86_64|amd64) arch=x86_64 ;;
    aarch64|arm64) arch=aarch64 ;;
    *) echo "release.sh: unsupported arch '$arch': x86_64 or aarch64" >&2; exit 2 ;;
esac
host_arch=$(uname -m)
if [ "$worktree" = 1 ]; then
    src=$root
    [ -n "$version" ] || version=$(git describe --always --dirty 2>/dev/null || echo unknown)
else
    commit=$(git rev-parse --verify "$ref^{commit}") || { echo "release.sh: no commit '$ref'" >&2; exit 2; }
    [ -n "$version" ] || version=$(git describe --always "$commit")
fi
case "$version" in
    *[!A-Za-z0-9._+-]*) echo "release.sh: version '$version' may hold only letters, digits and . _ + -" >&2; exit 2 ;;
esac

# Which SDK builds it: a static Linux SDK (musl) for the arch if one is installed, else this
# toolchain's own glibc target with --static-swift-stdlib (this machine's arch only).
sdks=$(swift sdk list 2>/dev/null || true)
static_sdk=$(printf '%s\n' "$sdks" | grep -i 'static-linux' | head -n 1 || true)
build_flags=(-c release --product herald --scratch-path "$root/.build-release")
if [ -n "$static_sdk" ] && [ -d "$HOME/.swiftpm/swift-sdks" ]; then
    triple="$arch-swift-linux-musl"
    echo "release.sh: static Linux SDK installed ($static_sdk): building a fully static binary for $triple"
    build_flags+=(--swift-sdk "$triple")
elif [ "$arch" != "$host_arch" ]; then
    cat >&2 <<END
release.sh: cannot build $arch here.
  This machine is $host_arch, and its toolchain ($(command -v swift)) carries Swift's runtime for
  $host_arch only ($(cd "$(dirname "$(dirname "$(command -v swift)")")/lib/swift_static/linux" 2>/dev/null && ls -d */ | grep -v '\.swiftmodule/' | tr -d / | tr '\n' ' ')).
  Cross-compiling needs a Swift SDK for $arch, and \`swift sdk list\` shows:
    ${sdks:-"(none)"}
  Either build on a $arch machine (or in the Dockerfile's build stage on one), or install the
  static Linux SDK (swift.org, "Static Linux SDK": \`swift sdk install <URL> --checksum <SUM>\`),
  which cross-compiles to both x86_64 and aarch64 musl, and run this again.
END
    exit 3
else
    echo "release.sh: no static Linux SDK installed (swift sdk list: ${sdks:-none}); linking Swift's runtime with --static-swift-stdlib for $arch (glibc)"
    build_flags+=(--static-swift-stdlib)
fi

if [ "$worktree" = 0 ]; then
    src=$root/.build-release-src
    # Exported again only for another commit: a fresh export's new times would rebuild Herald's
    # modules for nothing.
    if [ "$(cat "$src/.release-commit" 2>/dev/null)" != "$commit" ]; then
        rm -rf "$src"
        mkdir -p "$src"
        git archive "$commit" | tar -x -C "$src"
        echo "$commit" > "$src/.release-commit"
    fi
    if [ -f "$root/Package.resolved" ] && ! cmp -s "$root/Package.resolved" "$src/Package.resolved"; then
        cp "$root/Package.resolved" "$src/Package.resolved"
    fi
    echo "release.sh: building commit $commit (git archive in $src)"
fi
build_flags+=(--package-path "$src")
echo "release.sh: swift build ${build_flags[*]}"
swift build "${build_flags[@]}"
bin_dir=$(swift build "${build_flags[@]}" --show-bin-path)
binary="$bin_dir/herald"
[ -x "$binary" ] || { echo "release.sh: no binary at $binary" >&2; exit 1; }

name="herald-$version-linux-$arch"
mkdir -p "$out"
stage=$(mktemp -d "${TMPDIR:-/tmp}/herald-release.XXXXXX")
trap 'rm -rf "$stage"' EXIT
dir="$stage/$name"
mkdir -p "$dir/bin" "$dir/docs" "$dir/deploy/systemd"
cp "$binary" "$dir/bin/herald"
unstripped=$(stat -c %s "$dir/bin/herald")
if [ "$strip_binary" = 1 ]; then
    strip --strip-all "$dir/bin/herald"
fi
stripped=$(stat -c %s "$dir/bin/herald")
# The documents from what was built; from the working tree where that commit has none yet.
for f in README.md docs/install.md deploy/systemd/herald.service deploy/herald.example.json; do
    if [ -f "$src/$f" ]; then
        cp "$src/$f" "$dir/$f"
    else
        echo "release.sh: $f is not in what was built; taking the working tree's"
        cp "$root/$f" "$dir/$f"
    fi
done
chmod 0755 "$dir/bin/herald"
chmod 0644 "$dir/README.md" "$dir/docs/install.md" "$dir/deploy/systemd/herald.service" "$dir/deploy/herald.example.json"

# The same inputs make the same archive: names sorted, owners and times fixed, gzip without a
# time stamp.
mtime=$(git log -1 --format=%ct 2>/dev/null || date +%s)
archive="$out/$name.tar.gz"
tar -C "$stage" --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$mtime" -cf - "$name" | gzip -9 -n > "$archive"
(cd "$out" && sha256sum "$name.tar.gz" > "$name.tar.gz.sha256")

echo "release.sh: $archive"
echo "  binary: $unstripped bytes unstripped, $stripped bytes in the archive$([ "$strip_binary" = 1 ] && echo ' (stripped)')"
echo "  archive: $(stat -c %s "$archive") bytes"
echo "  sha256: $(cut -d' ' -f1 "$archive.sha256")"
echo "  links to (readelf NEEDED): $(readelf -d "$dir/bin/herald" | sed -n 's/.*Shared library: \[\(.*\)\]/\1/p' | tr '\n' ' ')"
if ldd "$dir/bin/herald" | grep -qiE 'swift|libFoundation|libdispatch|libBlocksRuntime'; then
    echo "release.sh: the binary still loads Swift libraries:" >&2
    ldd "$dir/bin/herald" | grep -iE 'swift|libFoundation|libdispatch|libBlocksRuntime' >&2
    exit 1
fi
echo "  prove it runs without Swift: scripts/check-release.sh $archive"
