#!/usr/bin/env bash
# What `dentrylab vm --kernel-source` needs on a Debian host to build a real
# kernel (the fake tree of tests/kernel_source.rs needs only make, patch and
# tar): the compiler and Kconfig's tools, libelf and OpenSSL headers, bc, and
# pahole (dwarves) for CONFIG_DEBUG_INFO_BTF in guest.config, and ccache, which
# `vm` compiles through when it is installed, so that a second patch on the
# same source recompiles only the files it touches; libcap for the kernel's
# selftests that `vm --selftests` builds. QEMU and the rest of `vm`
# come from .ci/run.
set -euo pipefail
need=()
for t in gcc:gcc make:make flex:flex bison:bison bc:bc perl:perl patch:patch pahole:dwarves xz:xz-utils cpio:cpio ccache:ccache; do
    command -v "${t%%:*}" >/dev/null 2>&1 || need+=("${t#*:}")
done
[ -e /usr/include/gelf.h ] || need+=(libelf-dev)
[ -e /usr/include/openssl/ssl.h ] || need+=(libssl-dev)
# vm --selftests: several of the kernel's filesystem selftests link libcap.
[ -e /usr/include/sys/capability.h ] || need+=(libcap-dev)
if [ "${#need[@]}" -gt 0 ]; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq "${need[@]}"
fi
echo "kernel build tools: present"
