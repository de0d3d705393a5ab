#!/usr/bin/env bash
# Facts the capture code depends on, read off a GPU host: the CUDA symbols the
# real libraries export (launch, graph, stream-ordered allocation, event,
# per-thread-stream variants) and what NVML reports while a kernel loop runs.
#   investigations/scripts/gpu_facts_h200.sh OUT_DIR
set -u
OUT=${1:?output directory}
mkdir -p "$OUT"
RT=$(python3 -c "import nvidia.cu13, os; print(os.path.join(list(nvidia.cu13.__path__)[0], 'lib', 'libcudart.so.13'))" 2>/dev/null || find / -name 'libcudart.so.13' 2>/dev/null | head -1)
DRV=$(ldconfig -p | awk '/libcuda.so.1 /{print $NF; exit}')
[ -n "$DRV" ] || DRV=/usr/local/nvidia/lib64/libcuda.so.1
echo "runtime $RT"; echo "driver $DRV"
pat='Launch|Graph|MallocAsync|FreeAsync|MemPool|Event|StreamWait|Memcpy|Memset|Synchronize|StreamQuery|Malloc|Free|_pt'
nm -D --defined-only "$RT" | awk '{print $NF}' | grep -E "$pat" | sort > "$OUT/runtime-symbols.txt"
nm -D --defined-only "$DRV" | awk '{print $NF}' | grep -E "$pat" | sort > "$OUT/driver-symbols.txt"
wc -l "$OUT"/*-symbols.txt
for f in "$RT" "$DRV"; do for s in cudaLaunchKernel cudaLaunchKernelExC cudaGraphLaunch cuLaunchKernel cuLaunchKernelEx cuGraphLaunch cuMemAllocAsync cuMemFreeAsync cudaMallocAsync cudaFreeAsync; do
  a=$(nm -D --defined-only "$f" | awk -v s=$s '$3==s{print $1}'); [ -n "$a" ] && echo "$(basename $f) $s $(objdump -d --start-address=0x$a --stop-address=$((16#$a + 8)) "$f" | awk -F'\t' 'NF>2{print $3}' | head -2 | tr '\n' ';')"
done; done
ls -l /usr/local/nvidia/lib64/libnvidia-ml.so* 2>/dev/null
python3 - <<'PY' > "$OUT/nvml.txt" 2>&1
import ctypes, time, threading, os
import torch
nv = ctypes.CDLL("libnvidia-ml.so.1")
print("init", nv.nvmlInit_v2())
dev = ctypes.c_void_p()
print("handle", nv.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(dev)))
class PUS(ctypes.Structure):
    _fields_ = [("pid", ctypes.c_uint), ("timeStamp", ctypes.c_ulonglong), ("smUtil", ctypes.c_uint), ("memUtil", ctypes.c_uint), ("encUtil", ctypes.c_uint), ("decUtil", ctypes.c_uint)]
class SV(ctypes.Union):
    _fields_ = [("d", ctypes.c_double), ("ui", ctypes.c_uint), ("ul", ctypes.c_ulong), ("ull", ctypes.c_ulonglong), ("sll", ctypes.c_longlong)]
class S(ctypes.Structure):
    _fields_ = [("timeStamp", ctypes.c_ulonglong), ("sampleValue", SV)]
x = torch.randn(8192, 8192, device="cuda")
stop = False
def work():
    while not stop:
        y = x @ x
        torch.cuda.synchronize()
t = threading.Thread(target=work); t.start()
last = int(time.time() * 1e6) - 2_000_000
for i in range(6):
    time.sleep(1.0)
    n = ctypes.c_uint(0)
    r = nv.nvmlDeviceGetProcessUtilization(dev, None, ctypes.byref(n), ctypes.c_ulonglong(last))
    buf = (PUS * max(n.value, 1))()
    r2 = nv.nvmlDeviceGetProcessUtilization(dev, buf, ctypes.byref(n), ctypes.c_ulonglong(last))
    print("proc", r, r2, n.value, [(b.pid, b.timeStamp, b.smUtil, b.memUtil) for b in buf[: n.value]], "me", os.getpid())
    vt = ctypes.c_int(); cnt = ctypes.c_uint(0)
    r = nv.nvmlDeviceGetSamples(dev, 1, ctypes.c_ulonglong(last), ctypes.byref(vt), ctypes.byref(cnt), None)
    sb = (S * max(cnt.value, 1))()
    r2 = nv.nvmlDeviceGetSamples(dev, 1, ctypes.c_ulonglong(last), ctypes.byref(vt), ctypes.byref(cnt), sb)
    ts = [s.timeStamp for s in sb[: cnt.value]]
    print("samples", r, r2, cnt.value, vt.value, "dt_us", [b - a for a, b in zip(ts, ts[1:])][:12], "vals", [s.sampleValue.ui for s in sb[: cnt.value]][:12])
    last = int(time.time() * 1e6)
stop = True; t.join()
class U(ctypes.Structure):
    _fields_ = [("gpu", ctypes.c_uint), ("memory", ctypes.c_uint)]
u = U(); print("util", nv.nvmlDeviceGetUtilizationRates(dev, ctypes.byref(u)), u.gpu, u.memory)
PY
cat "$OUT/nvml.txt"
