#!/usr/bin/env bash
# Builds what the `wasm+microvm` provider boots: a kernel and the two virtio
# modules it needs (virtio-mmio transport, virtio-serial console), taken from
# Debian's own kernel package. Nothing is downloaded from outside the package
# registries, and nothing is installed on the host: the package is fetched
# with `apt-get download` and unpacked into a scratch directory.
#
# The initramfs itself is built by the provider at start (host/src/wrapper/
# microvm/archive.rs): its /init is the static (musl) plimsoll-worker, and it holds
# these modules and the precompiled guest images.
#
# Output (PLIMSOLL_MICROVM_IMAGE, default ~/.cache/plimsoll/microvm):
#   vmlinuz            the kernel as packaged (a compressed bzImage)
#   vmlinux            the same kernel uncompressed, when it could be
#                      extracted: QEMU boots it through its PVH entry point
#                      and skips the decompression, which under software
#                      emulation is half of the boot (measured: 13 s -> 6.5 s
#                      to /init)
#   modules/*.ko       virtio_ring, virtio, virtio_mmio, virtio_console
#   modules/order      the order /init loads them in (dependencies first)
#   version            the Debian package and version it came from
set -euo pipefail

out=${PLIMSOLL_MICROVM_IMAGE:-$HOME/.cache/plimsoll/microvm}
meta=${PLIMSOLL_MICROVM_KERNEL_PACKAGE:-linux-image-amd64}
# The metapackage names the real image package (linux-image-6.1.0-NN-amd64).
pkg=$(apt-cache depends "$meta" 2>/dev/null | awk '/Depends: linux-image-[0-9]/ {print $2; exit}')
if [ -z "$pkg" ]; then
    echo "build-image: cannot resolve $meta to a kernel package (run apt-get update?)" >&2
    exit 1
fi
ver=$(apt-cache policy "$pkg" | awk '/Candidate:/ {print $2}')
if [ -f "$out/version" ] && [ "$(cat "$out/version")" = "$pkg $ver" ] && [ -f "$out/vmlinuz" ] &&
    [ -f "$out/vmlinux" ]; then
    echo "build-image: $out is up to date ($pkg $ver)"
    exit 0
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# apt-get download drops privileges to _apt where it can; let it write here.
chmod 0777 "$tmp"
(cd "$tmp" && apt-get download -q "$pkg" >/dev/null 2>&1) || {
    echo "build-image: apt-get download $pkg failed" >&2
    exit 1
}
dpkg-deb -x "$tmp"/"$pkg"_*.deb "$tmp/root"

new="$out.new.$$"
rm -rf "$new"
mkdir -p "$new/modules"
cp "$tmp"/root/boot/vmlinuz-* "$new/vmlinuz"
# The bzImage carries the kernel as one compressed stream after its
# decompressor; find the stream and inflate it. An ELF with the PVH note
# (CONFIG_PVH, on in Debian) is what QEMU can boot directly.
extract() {
    local magic=$1 tool=$2 off
    off=$(LC_ALL=C grep -obUaP "$magic" "$new/vmlinuz" | head -n1 | cut -d: -f1)
    [ -n "$off" ] || return 1
    tail -c "+$((off + 1))" "$new/vmlinuz" | $tool 2>/dev/null > "$new/vmlinux.tmp" || true
    [ "$(head -c 4 "$new/vmlinux.tmp" | od -An -tx1 | tr -d ' ')" = "7f454c46" ]
}
if { grep -q '^CONFIG_PVH=y' "$tmp"/root/boot/config-* 2>/dev/null; } &&
    { extract '\xfd7zXZ\x00' 'xz -dc --single-stream' ||
      extract '\x28\xb5\x2f\xfd' 'zstd -dc' ||
      extract '\x1f\x8b\x08' 'gzip -dc'; }; then
    mv "$new/vmlinux.tmp" "$new/vmlinux"
else
    rm -f "$new/vmlinux.tmp"
    echo "build-image: could not extract an uncompressed kernel; QEMU will boot the bzImage (slower)" >&2
fi
moddir=$(echo "$tmp"/root/lib/modules/*/kernel)
: > "$new/modules/order"
for m in virtio_ring virtio virtio_mmio virtio_console; do
    src=$(find "$moddir/drivers" -name "$m.ko" -o -name "$m.ko.xz" -o -name "$m.ko.zst" | head -n1)
    if [ -z "$src" ]; then
        # Built into the kernel: nothing to load.
        if grep -q "/$m.ko" "$tmp"/root/lib/modules/*/modules.builtin 2>/dev/null; then
            continue
        fi
        echo "build-image: $m is neither a module nor built in to $pkg" >&2
        exit 1
    fi
    case "$src" in
        *.xz) xz -dc "$src" > "$new/modules/$m.ko" ;;
        *.zst) zstd -qdc "$src" > "$new/modules/$m.ko" ;;
        *) cp "$src" "$new/modules/$m.ko" ;;
    esac
    echo "$m.ko" >> "$new/modules/order"
done
echo "$pkg $ver" > "$new/version"
rm -rf "$out"
mkdir -p "$(dirname "$out")"
mv "$new" "$out"
echo "build-image: $out ($pkg $ver)"
