#!/usr/bin/env bash
# One batched run on the GPU machine: install carried wheels, make NVIDIA's OpenCL visible,
# then run each step named on the command line. Output goes to $OUT.
#   build    the C extension in place for the machine's Python (the working tree carries this
#            machine's build, for another Python), then says whether npgpu uses it
#   tests    the CuPy tests (PYTEST_K selects others)
#   measure  tools/measure_cupy.py (E8, small arrays, costs)
#   residency  tools/probe_residency.py on resnet at preset L: as it runs, without OVER_NUMPY's
#            clause, and with the large rate alone (needs NPBench's kernels carried in .npb/:
#            tools/gpu_npbench.sh says how)
#   anything else runs as a shell command, e.g.
#   bash tools/gpu_session.sh build tests "python3 ../shared/npbench/run.py --backend cupy --preset L --cupy --json \$OUT/a.json"
set -u
export PYTHONUNBUFFERED=1
if [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
  export PYTHONPATH=/tmp/site:$PWD
fi
export PYTHONPATH=${PYTHONPATH:-$PWD}
export PATH=/tmp/site/bin:$PATH
mkdir -p /tmp/icd && echo libnvidia-opencl.so.1 > /tmp/icd/nvidia.icd && export OCL_ICD_VENDORS=/tmp/icd
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv | tee "$OUT/gpu.txt"
python3 -c "import numpy, cupy; print('numpy', numpy.__version__, 'cupy', cupy.__version__)" | tee -a "$OUT/gpu.txt"
for step in "$@"; do
  case "$step" in
    build) (python3 setup.py -q build_ext --inplace 2>&1 | tail -5
            python3 -c "import npgpu; print('C extension in use:', npgpu.native_wrappers())") | tee -a "$OUT/gpu.txt" ;;
    tests) timeout 420 python3 -m pytest tests -q -p no:cacheprovider -k "${PYTEST_K-cupy}" 2>&1 \
             | tee "$OUT/tests.txt" | tail -40 ;;
    measure) timeout 300 python3 tools/measure_cupy.py 2>&1 | tee "$OUT/measure.txt" ;;
    residency) for variant in "" "--over-numpy inf" --large-rate-only; do
                 timeout 120 python3 tools/probe_residency.py --root .npb/npbench --backend cupy --preset L --calls 3 $variant
               done 2>&1 | tee "$OUT/residency.txt" ;;
    *) bash -c "$step" 2>&1 | tee -a "$OUT/extra.txt" ;;
  esac
done
