# Sourced by the scripts that run binaries carried to the GPU machine (gpu-carried*.sh,
# gpu-profile-carried.sh): $out (the call's $OUT), the carried libraries on the loader's path, the
# GPU and its clocks into $out/gpu.txt, and t0 for elapsed times.
out=${OUT:-$PWD/out}
mkdir -p "$out"
export LD_LIBRARY_PATH=$PWD/build/carry/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee "$out/gpu.txt"
t0=$SECONDS
