# Shared by scripts/ffmpeg-build, scripts/ffmpeg-patches-regen,
# scripts/demo-ffmpeg and scripts/bench-ffmpeg (sourced, not run).
#
# Sources of the two FFmpeg lines vmafx patches:
#   7.1  Debian trixie's source package `ffmpeg` (7.1.x, complete with
#        fftools): the pristine upstream tarball (*.orig.tar.xz) fetched with
#        `apt-get source --download-only` from a trixie deb-src entry kept in
#        a sources file of its own. Debian's own patches are not applied.
#   9.0  the crates.io crate `ffmpeg-src` =9.0.2 (pristine 9.0.2 libraries in
#        native/ffmpeg.tar.xz; no fftools, so no ffmpeg program), fetched by
#        cargo from a throw-away manifest.

set -euo pipefail

VMAFX_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VMAFX_BUILD="${VMAFX_BUILD:-$VMAFX_ROOT/build}"
FFMPEG_DL="$VMAFX_BUILD/ffmpeg-dl"
FFMPEG_SRC_CRATE_VERSION="9.0.2"

log() { printf '[ffmpeg] %s\n' "$*" >&2; }
die() { printf '[ffmpeg] error: %s\n' "$*" >&2; exit 1; }

# The 7.1 tarball: build/ffmpeg-dl/ffmpeg_7.1.*.orig.tar.xz (newest kept).
fetch_ffmpeg_71() {
    mkdir -p "$FFMPEG_DL"
    local have
    have=$(ls "$FFMPEG_DL"/ffmpeg_7.1.*.orig.tar.xz 2>/dev/null | sort -V | tail -1 || true)
    if [ -n "$have" ]; then echo "$have"; return; fi
    local list=/etc/apt/sources.list.d/vmafx-trixie-src.sources
    local versions
    versions=$(apt-cache showsrc ffmpeg 2>/dev/null | sed -n 's/^Version: //p' || true)
    if ! printf '%s\n' "$versions" | grep -q '^7:7\.1\.'; then
        log "adding a trixie deb-src entry ($list)"
        cat > "$list" <<'SRC'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: trixie
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
        apt-get update -qq >&2
    fi
    # Pick the 7.1.x version explicitly: a later Debian could carry another line.
    local version
    version=$(apt-cache showsrc ffmpeg | sed -n 's/^Version: \(7:7\.1\..*\)$/\1/p' | sort -V | tail -1)
    [ -n "$version" ] || die "no ffmpeg 7.1.x source package found (trixie deb-src)"
    log "downloading ffmpeg source $version"
    (cd "$FFMPEG_DL" && apt-get source --download-only "ffmpeg=$version" >&2)
    have=$(ls "$FFMPEG_DL"/ffmpeg_7.1.*.orig.tar.xz | sort -V | tail -1)
    [ -n "$have" ] || die "apt-get source gave no orig tarball"
    echo "$have"
}

# The 9.0 tarball, from the ffmpeg-src crate in cargo's registry cache.
fetch_ffmpeg_90() {
    mkdir -p "$FFMPEG_DL"
    local out="$FFMPEG_DL/ffmpeg-$FFMPEG_SRC_CRATE_VERSION.tar.xz"
    if [ -f "$out" ]; then echo "$out"; return; fi
    local crate
    crate=$(ls "${CARGO_HOME:-$HOME/.cargo}"/registry/cache/*/ffmpeg-src-$FFMPEG_SRC_CRATE_VERSION.crate 2>/dev/null | head -1 || true)
    if [ -z "$crate" ]; then
        log "fetching crate ffmpeg-src $FFMPEG_SRC_CRATE_VERSION"
        local m="$FFMPEG_DL/fetch-ffmpeg-src"
        mkdir -p "$m/src"
        cat > "$m/Cargo.toml" <<TOML
[package]
name = "fetch-ffmpeg-src"
version = "0.0.0"
edition = "2021"
[dependencies]
ffmpeg-src = { version = "=$FFMPEG_SRC_CRATE_VERSION", default-features = false }
[workspace]
TOML
        : > "$m/src/lib.rs"
        (cd "$m" && cargo fetch >&2)
        crate=$(ls "${CARGO_HOME:-$HOME/.cargo}"/registry/cache/*/ffmpeg-src-$FFMPEG_SRC_CRATE_VERSION.crate | head -1)
    fi
    tar -xzf "$crate" -O "ffmpeg-src-$FFMPEG_SRC_CRATE_VERSION/native/ffmpeg.tar.xz" > "$out.tmp"
    mv "$out.tmp" "$out"
    echo "$out"
}

# nv-codec-headers (FFmpeg's ffnvcodec, 12.1.14.0), shipped inside the same
# ffmpeg-src crate: build/ffmpeg-dl/nv-codec-headers-<crate version>.tar.xz.
fetch_nv_codec_headers() {
    local out="$FFMPEG_DL/nv-codec-headers-$FFMPEG_SRC_CRATE_VERSION.tar.xz"
    if [ -f "$out" ]; then echo "$out"; return; fi
    fetch_ffmpeg_90 > /dev/null
    local crate
    crate=$(ls "${CARGO_HOME:-$HOME/.cargo}"/registry/cache/*/ffmpeg-src-$FFMPEG_SRC_CRATE_VERSION.crate | head -1)
    tar -xzf "$crate" -O "ffmpeg-src-$FFMPEG_SRC_CRATE_VERSION/native/nv-codec-headers.tar.xz" > "$out.tmp"
    mv "$out.tmp" "$out"
    echo "$out"
}

# extract_pristine LINE DEST: a pristine tree of LINE (7.1 or 9.0) in DEST.
extract_pristine() {
    local line=$1 dest=$2 tarball
    case "$line" in
        7.1) tarball=$(fetch_ffmpeg_71) ;;
        9.0) tarball=$(fetch_ffmpeg_90) ;;
        *) die "unknown FFmpeg line $line" ;;
    esac
    rm -rf "$dest" "$dest.tmp"
    mkdir -p "$dest.tmp"
    tar -xJf "$tarball" -C "$dest.tmp"
    local top
    top=$(ls "$dest.tmp")
    [ "$(echo "$top" | wc -l)" = 1 ] || die "unexpected tarball layout in $tarball"
    mv "$dest.tmp/$top" "$dest"
    rmdir "$dest.tmp"
}
