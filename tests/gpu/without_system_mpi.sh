#!/usr/bin/env bash
# without_system_mpi.sh COMMAND...: COMMAND in a mount namespace where this machine's Open MPI,
# PMIx, UCX, yaml-cpp and libevent are hidden (their folders under tmpfs, their libraries and
# programs bound to /dev/null), as on a machine that has none: what it runs must come from the
# gpu-check bundle. NCCL is hidden too, in the places this machine has it (the CUDA folders,
# the multiarch folder): the programs must start without it (arlab loads it at run time).
# Needs root (unshare -m); exits 77 where it cannot.
set -u
if [[ ${1:-} != --inside ]]; then
  unshare -m true 2>/dev/null || { echo "SKIPPED: no mount namespace here (unshare -m needs root)"; exit 77; }
  exec unshare -m bash "$0" --inside "$@"
fi
shift
lib=/usr/lib/x86_64-linux-gnu
for d in $lib/openmpi $lib/pmix2 $lib/ucx /usr/share/openmpi; do
  [[ -d $d ]] && mount -t tmpfs none "$d"
done
for f in /usr/bin/orterun /usr/bin/orted $lib/libmpi.so.40 $lib/libopen-pal.so.40 $lib/libopen-rte.so.40 \
         $lib/libucs.so.0 $lib/libucp.so.0 $lib/libuct.so.0 $lib/libyaml-cpp.so.0.7 $lib/libevent_core-2.1.so.7 \
         $lib/libevent-2.1.so.7 $lib/libhwloc.so.15; do
  [[ -e $f ]] && mount --bind /dev/null "$(readlink -f "$f")"
done
for f in /usr/local/cuda/lib/libnccl.so* /usr/local/cuda/lib64/libnccl.so* $lib/libnccl.so*; do
  [[ -e $f && ! -L $f ]] && mount --bind /dev/null "$f"
done
exec "$@"
