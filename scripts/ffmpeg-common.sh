# Shared by scripts/ffmpeg-build, scripts/ffmpeg-patches-regen,
# scripts/demo-ffmpeg and scripts/bench-ffmpeg (sourced, not run).
#
# Sources of the FFmpeg lines vmafx patches:
#   7.1  Debian trixie's source package `ffmpeg` (7.1.x, complete with
#        fftools): the pristine upstream tarball (*.orig.tar.xz) fetched with
#        `apt-get source --download-only` from a trixie deb-src entry kept in
#        a sources file of its own. Debian's own patches are not applied.
#   8.1  the same from Debian sid's source package `ffmpeg` (8.1.x).
#   9.0  the same from Debian forky's source package `ffmpeg` (9.0.x).
# The registry crate `ffmpeg-src` (8.1.x, 9.0.x) ships the libraries only
# (no fftools, no doc/), so it cannot build the ffmpeg program, and the
# series' doc/filters.texi patch has nothing to apply to; it still gives
# nv-codec-headers (=9.0.2: native/nv-codec-headers.tar.xz).
# The deb-src entries name the Debian archive this machine's apt already
# uses (apt_debian_archive): the project's files name no mirror.
#
# Downloads and builds live in a cache outside the clone (FFMPEG_CACHE,
# default ${XDG_CACHE_HOME:-~/.cache}/vmafx/ffmpeg), so a fresh clone on
# the same machine reuses them; VMAFX_BUILD (default <clone>/build) holds
# what this clone links and runs.

set -euo pipefail

VMAFX_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VMAFX_BUILD="${VMAFX_BUILD:-$VMAFX_ROOT/build}"
FFMPEG_CACHE="${FFMPEG_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/vmafx/ffmpeg}"
FFMPEG_DL="$FFMPEG_CACHE/dl"
FFMPEG_SRC_CRATE_VERSION="9.0.2"

log() { printf '[ffmpeg] %s\n' "$*" >&2; }
die() { printf '[ffmpeg] error: %s\n' "$*" >&2; exit 1; }

# The Debian archive this machine's apt uses, as "URI KEYRING": the first
# enabled `deb` entry (deb822 .sources or one-line .list) whose suites
# include the machine's own codename. KEYRING is the entry's Signed-By, or
# Debian's archive keyring.
apt_debian_archive() {
    local codename uri="" keyring=""
    codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
    [ -n "$codename" ] || die "/etc/os-release names no VERSION_CODENAME: not a Debian machine?"
    local f
    for f in /etc/apt/sources.list.d/*.sources; do
        [ -f "$f" ] || continue
        read -r uri keyring < <(awk -v RS= -v want="$codename" '
            { types = ""; uris = ""; suites = ""; signed = ""; enabled = "yes"
              n = split($0, lines, "\n")
              for (i = 1; i <= n; i++) {
                  l = lines[i]; if (l ~ /^[ \t]*#/) continue
                  k = l; sub(/:.*/, "", k); v = l; sub(/^[^:]*:[ \t]*/, "", v)
                  if (k == "Types") types = " " v " "
                  else if (k == "URIs") uris = v
                  else if (k == "Suites") suites = " " v " "
                  else if (k == "Signed-By") signed = v
                  else if (k == "Enabled") enabled = v
              }
              if (enabled != "no" && types ~ / deb / && suites ~ (" " want " ") && uris != "") {
                  split(uris, u, " "); print u[1], signed; exit
              } }' "$f")
        [ -n "$uri" ] && break
    done
    if [ -z "$uri" ]; then
        read -r uri < <(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null \
            | sed -n 's/^[[:space:]]*deb[[:space:]]\+\(\[[^]]*\][[:space:]]\+\)\?//p' \
            | awk -v want="$codename" '$2 == want { print $1; exit }') || true
    fi
    [ -n "$uri" ] || die "no apt source for Debian $codename found in /etc/apt: cannot name an archive for deb-src entries"
    case "$keyring" in /*) ;; *) keyring=/usr/share/keyrings/debian-archive-keyring.gpg ;; esac
    echo "$uri $keyring"
}

# fetch_debian_ffmpeg LINE SUITE: the newest Debian source package of FFmpeg
# LINE.x's upstream tarball, FFMPEG_DL/ffmpeg_LINE.*.orig.tar.xz (kept;
# later runs reuse it). Adds a deb-src entry for SUITE when apt knows no
# such version.
fetch_debian_ffmpeg() {
    local line=$1 suite=$2 pattern="ffmpeg_$1.*.orig.tar.xz"
    mkdir -p "$FFMPEG_DL"
    local have
    have=$(cd "$FFMPEG_DL" && ls $pattern 2>/dev/null | sort -V | tail -1 || true)
    if [ -n "$have" ]; then echo "$FFMPEG_DL/$have"; return; fi
    local re="^7:${line//./\\.}\\."
    local list=/etc/apt/sources.list.d/vmafx-$suite-src.sources
    if ! grep -q "$re" <<<"$(apt-cache showsrc ffmpeg 2>/dev/null | sed -n 's/^Version: //p')"; then
        local uri keyring
        read -r uri keyring < <(apt_debian_archive)
        log "adding a $suite deb-src entry for $uri ($list)"
        printf 'Types: deb-src\nURIs: %s\nSuites: %s\nComponents: main\nSigned-By: %s\n' \
            "$uri" "$suite" "$keyring" > "$list"
        apt-get -o DPkg::Lock::Timeout=900 update -qq >&2
    fi
    # Pick the LINE.x version explicitly: the suite may carry other lines too.
    local version
    version=$(apt-cache showsrc ffmpeg | sed -n 's/^Version: //p' | grep "$re" | sort -V | tail -1)
    [ -n "$version" ] || die "no ffmpeg $line.x source package found ($suite deb-src)"
    log "downloading ffmpeg source $version"
    (cd "$FFMPEG_DL" && apt-get source --download-only "ffmpeg=$version" >&2)
    have=$(cd "$FFMPEG_DL" && ls $pattern 2>/dev/null | sort -V | tail -1 || true)
    [ -n "$have" ] || die "apt-get source ffmpeg=$version gave no $pattern"
    echo "$FFMPEG_DL/$have"
}

# The 7.1 and 8.1 tarballs (upstream releases, complete with fftools).
fetch_ffmpeg_71() { fetch_debian_ffmpeg 7.1 trixie; }
fetch_ffmpeg_81() { fetch_debian_ffmpeg 8.1 sid; }
fetch_ffmpeg_90() { fetch_debian_ffmpeg 9.0 forky; }

# The ffmpeg-src crate (FFMPEG_SRC_CRATE_VERSION) in cargo's registry cache,
# fetched by cargo from a throw-away manifest when missing.
fetch_ffmpeg_src_crate() {
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
    echo "$crate"
}

# nv-codec-headers (FFmpeg's ffnvcodec, 12.1.14.0), shipped inside the same
# ffmpeg-src crate: FFMPEG_DL/nv-codec-headers-<crate version>.tar.xz.
fetch_nv_codec_headers() {
    local out="$FFMPEG_DL/nv-codec-headers-$FFMPEG_SRC_CRATE_VERSION.tar.xz"
    if [ -f "$out" ]; then echo "$out"; return; fi
    mkdir -p "$FFMPEG_DL"
    local crate
    crate=$(fetch_ffmpeg_src_crate)
    tar -xzf "$crate" -O "ffmpeg-src-$FFMPEG_SRC_CRATE_VERSION/native/nv-codec-headers.tar.xz" > "$out.tmp"
    mv "$out.tmp" "$out"
    echo "$out"
}

# ffmpeg_tarball LINE: the pristine source tarball of LINE (7.1, 8.1, 9.0).
ffmpeg_tarball() {
    case "$1" in
        7.1) fetch_ffmpeg_71 ;;
        8.1) fetch_ffmpeg_81 ;;
        9.0) fetch_ffmpeg_90 ;;
        *) die "unknown FFmpeg line $1" ;;
    esac
}

# extract_pristine LINE DEST: a pristine tree of LINE in DEST.
extract_pristine() {
    local line=$1 dest=$2 tarball
    tarball=$(ffmpeg_tarball "$line")
    rm -rf "$dest" "$dest.tmp"
    mkdir -p "$dest.tmp"
    tar -xJf "$tarball" -C "$dest.tmp"
    local top
    top=$(ls "$dest.tmp")
    [ "$(echo "$top" | wc -l)" = 1 ] || die "unexpected tarball layout in $tarball"
    mv "$dest.tmp/$top" "$dest"
    rmdir "$dest.tmp"
}
