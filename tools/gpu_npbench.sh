#!/usr/bin/env bash
# NPBench's 27 kernels on the GPU machine at preset L, split so that each part fits one device call
# (600 s). NPBench's files are third-party code for measuring and never part of the project: copy
# ../shared/npbench into the ignored folder .npb/ and carry it, e.g. from this machine
#   mkdir -p .npb && cp -r ../shared/npbench .npb/
#   run(command="bash tools/gpu_session.sh build 'bash tools/gpu_npbench.sh a'", carry=[".npb"])
# Parts: a and b time NPBench's CuPy ports too (--cupy), ten rows each; c the seven rows whose
# ports take more than a row's minute (no --cupy). Tables go to $OUT/npbench-<part>.json.
set -u
PRESET=${PRESET:-L}
REPS=${REPS:-3}
BACKEND=${BACKEND:-cupy}
case "${1:?part a, b or c}" in
  a) ROWS=adi,atax,azimint_hist,cavity_flow,compute,contour_integral,correlation,deriche,doitgen,fdtd_2d; PORT=--cupy ;;
  b) ROWS=gemver,go_fast,heat_3d,jacobi_1d,k2mm,mandelbrot1,mandelbrot2,mlp,resnet,softmax; PORT=--cupy ;;
  c) ROWS=cholesky,crc16,gramschmidt,lu,seidel_2d,spmv,syr2k; PORT= ;;
  *) echo "unknown part $1" >&2; exit 2 ;;
esac
timeout 560 python3 .npb/npbench/run.py --root .npb/npbench --backend "$BACKEND" --preset "$PRESET" --reps "$REPS" \
  --only "$ROWS" $PORT --timeout 120 --json "$OUT/npbench-$1.json" 2>&1 | tee "$OUT/npbench-$1.txt"
