#!/usr/bin/env bash
# Lays out the root filesystem of cudagate's runtime image: the binary at
# /usr/local/bin/cudagate, every shared library it loads (as ldd resolves
# them on this Debian 12 build machine) with the dynamic loader, the CA bundle
# (/etc/ssl/certs/ca-certificates.crt, for registries and the API server),
# /etc/passwd and /etc/group naming the unprivileged user 65532, an
# /etc/nsswitch.conf, and /tmp.
# The Containerfile's build stage runs it; the manifests test runs it too
# and starts the binary inside the result with chroot.
#
#   scripts/container-rootfs.sh BINARY ROOTFS
set -euo pipefail

die() {
  echo "container-rootfs.sh: error: $*" >&2
  exit 2
}
[ $# -eq 2 ] || die "usage: container-rootfs.sh BINARY ROOTFS"
binary=$1
rootfs=$2
[ -x "$binary" ] || die "not an executable: $binary"
ca_bundle=/etc/ssl/certs/ca-certificates.crt
[ -s "$ca_bundle" ] || die "no CA bundle at $ca_bundle (install ca-certificates)"

mkdir -p "$rootfs/usr/local/bin" "$rootfs/etc/ssl/certs" "$rootfs/tmp"
chmod 1777 "$rootfs/tmp"
install -m 755 "$binary" "$rootfs/usr/local/bin/cudagate"
install -m 644 "$ca_bundle" "$rootfs$ca_bundle"

# Each library at the path the loader looks it up by, as a file (not a link).
libs=$(ldd "$binary" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }')
[ -n "$libs" ] || die "ldd found no libraries for $binary"
for lib in $libs; do
  mkdir -p "$rootfs$(dirname "$lib")"
  cp -L "$lib" "$rootfs$lib"
done

# Names from /etc/hosts first, then DNS (glibc's own default is the reverse).
echo "hosts: files dns" >"$rootfs/etc/nsswitch.conf"
cat >"$rootfs/etc/passwd" <<'PASSWD'
root:x:0:0:root:/root:/sbin/nologin
cudagate:x:65532:65532:cudagate:/nonexistent:/sbin/nologin
PASSWD
cat >"$rootfs/etc/group" <<'GROUP'
root:x:0:
cudagate:x:65532:
GROUP
