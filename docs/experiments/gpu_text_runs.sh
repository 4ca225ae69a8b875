#!/usr/bin/env bash
# One call on a GPU machine (docs/gpu.md; results in docs/experiments/text-memory.md section 4):
# configure and build as .ci/gpu does, then six text-model trainings on the one GPU at once
# (Memformer seeds 0-2, RMT, Transformer-XL, the Transformer; batch 256, BPTT), each with as
# many steps as a 12-step calibration says fit before END seconds, while the test suite runs
# beside them (ctest -j6, CUDA and file-system tests first). Run from the repository root with
# .ci/gpu-debs and a data-set cache in .gpu-data (sotu's .json addresses, moby-dick) carried:
#   END=535 OUT=/some/dir bash docs/experiments/gpu_text_runs.sh
# (RUNS, EXTRA, BATCH and LR below change what trains; at most 8 files come back from the
# device tool, so at most 7 runs.)
# $OUT (a new or empty folder; anything else is refused, exit 2, before anything is written)
# receives the runs' last checkpoints (NAME.safetensors) and logs.tgz (build, ctest,
# calibration and training logs, each run's metrics.log). Everything else goes to the script's
# own mktemp folder, removed when it exits.
set -u
root=$PWD; out=${OUT:-$root/gpu-out}
if [[ -e $out && ( ! -d $out || -n $(ls -A "$out") ) ]]; then
  echo "gpu_text_runs.sh: OUT=$out is not an empty folder; name a new or empty one (nothing was written)" >&2
  exit 2
fi
# The only recursive delete: this mktemp folder, made here, removed on exit (ctest gpu_text_runs_out
# shows a user's file beside it in TMPDIR survives).
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
logs=$work/logs; mkdir -p $logs
# Off the GPU machine nothing is built or trained (a CPU box would build the whole tree with -j16).
if ! nvidia-smi -L > $logs/nvidia-smi-L.txt 2>&1; then
  echo "gpu_text_runs.sh: no NVIDIA GPU here (nvidia-smi -L failed); run it on the device machine (docs/gpu.md); nothing was written" >&2
  exit 2
fi
mkdir -p "$out"
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
log() { echo "[t=$(el)s] $*" | tee -a $logs/session.log; }
END=${END:-540}           # seconds after start when everything must be packed
export MNEMO_DATA_DIR=${MNEMO_DATA_DIR:-$root/.gpu-data}
nvidia-smi > $logs/nvidia-smi.txt 2>&1
pk=$root/build-gpu/debroot; mkdir -p $pk; for d in .ci/gpu-debs/*.deb; do dpkg -x $d $pk; done
tp=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')
nd=$(python3 -c 'import nvidia.nccl as m; print(list(m.__path__)[0])' 2>/dev/null); [ -f "$nd/include/nccl.h" ] && export NCCL_HOME=$nd
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DMNEMO_GUI=OFF -DMNEMO_CUDA=ON "-DCMAKE_PREFIX_PATH=$tp;$pk/usr" "-DMNEMO_FONT=$pk/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf" > $logs/configure.log 2>&1 || { log configure failed; tail -30 $logs/configure.log; }
log configured
ninja -C build-gpu -j16 mnemoscope > $logs/build-app.log 2>&1 || { log build failed; grep -E "error" $logs/build-app.log | head -30; }
log "mnemoscope built"
B=$root/build-gpu/mnemoscope
$B info > $logs/info.txt 2>&1
(ninja -C build-gpu -j10 mnemo_tests > $logs/build-tests.log 2>&1; echo "tests built rc $? at t=$(el)" >> $logs/session.log) &
BUILD_PID=$!
# RUNS: NAME:CONFIG:SEED ... (sessions/CONFIG.json); EXTRA: more train flags for every run
# (e.g. EXTRA="--set model.dim=512 --set model.layers=4 --data .gpu-data/corpus").
runs=${RUNS:-"mf-s0:text-memformer:0 mf-s1:text-memformer:1 mf-s2:text-memformer:2 rmt-s0:text-rmt:0 trxl-s0:text-trxl:0 tf-s0:text-transformer:0"}
common="--device cuda --set train.strategy=bptt --set train.batch=${BATCH:-256} --set train.lr=${LR:-0.0015} --set train.warmup=60 ${EXTRA:-}"
# calibration: 12 steps of every run at once
for r in $runs; do IFS=: read n c s <<< "$r"
  timeout -k 10 120 $B --threads 1 train --config sessions/$c.json --out $work/cal/$n $common --set train.seed=$s --steps 12 --set train.eval_every=0 --set train.save_every=0 > $logs/cal-$n.log 2>&1 &
  cal_pids="${cal_pids:-} $!"
done; wait $cal_pids
left=$(( END - 25 - $(el) ))
log "calibrated; ${left}s left for training"
for r in $runs; do IFS=: read n c s <<< "$r"
  sps=$(python3 - $work/cal/$n/metrics.log <<'PY'
import re,sys,statistics
t=open(sys.argv[1],'rb').read().decode('latin1')
v=[float(a) for a,b in re.findall(r'"seconds":([0-9.e-]+),"step":([0-9]+)',t) if int(b)>=5]
print(statistics.median(v) if v else 9)
PY
)
  steps=$(python3 -c "print(max(20,int(0.85*($left-20)/$sps)))")
  log "$n: $sps s/step (calibration) -> $steps steps"
  timeout -k 30 -s TERM $left $B --threads 1 train --config sessions/$c.json --out $work/gr/$n $common --set train.seed=$s --steps $steps --set train.eval_every=$((steps/4)) --set train.eval_batches=4 --set train.save_every=0 --set train.save_every_seconds=60 --set train.eval_zero_memory=true > $logs/train-$n.log 2>&1 &
done
wait $BUILD_PID
# tests: CUDA and file-system ones first, then the rest while time lasts
TR=build-gpu/tests
export MNEMO_REQUIRE_CUDA=1 MNEMO_TEST_PYTHON=${MNEMO_TEST_PYTHON:-$(command -v python3)}
cd build-gpu
tl=$(( END - 60 - $(el) ))
timeout $(( tl<200?tl:200 )) ctest -j6 --timeout 150 -R "CUDA|cuda|NCCL|platform|safetensors|atomic|force|export|cli:|viz|session" > $logs/ctest-a.log 2>&1; log "ctest a rc $?"
tl=$(( END - 45 - $(el) )); [ $tl -gt 20 ] && { timeout $tl ctest -j6 --timeout 120 -E "CUDA|cuda|NCCL|platform|safetensors|atomic|force|export|cli:|viz|session" > $logs/ctest-b.log 2>&1; log "ctest b rc $?"; }
cd $root
wait
log "training done"
for r in $runs; do IFS=: read n c s <<< "$r"
  f=$(ls $work/gr/$n/checkpoints/step-*.safetensors 2>/dev/null | tail -1); [ -n "$f" ] && cp $f $out/$n.safetensors
  mkdir -p $logs/$n; cp $work/gr/$n/metrics.log $work/gr/$n/manifest.json $logs/$n/ 2>/dev/null; cp $work/gr/$n/*.json $logs/$n/ 2>/dev/null
done
nvidia-smi --query-gpu=name,memory.used --format=csv >> $logs/nvidia-smi.txt 2>&1
tar czf $out/logs.tgz -C $work logs
ls -la $out; log "packed"
