"""Whether a process runs a library function's original code: the first
bytes of the function as the process's memory holds them (/proc/PID/mem)
against the library file's bytes at the same place. A uprobe breakpoint
(int3, 0xcc) written into that process shows as a difference.
Prints one JSON line. Usage (root): code_bytes.py PID ADDRESS [LABEL]
"""
import json
import sys

N = 16


def main() -> None:
    pid, addr = int(sys.argv[1]), int(sys.argv[2])
    label = sys.argv[3] if len(sys.argv) > 3 else ""
    for line in open(f"/proc/{pid}/maps"):
        f = line.split()
        lo, hi = (int(v, 16) for v in f[0].split("-"))
        if lo <= addr < hi and len(f) >= 6:
            path, off = f[5], int(f[2], 16)
            break
    else:
        raise SystemExit(f"no mapping of {addr:#x} in {pid}")
    with open(f"/proc/{pid}/mem", "rb") as m:
        m.seek(addr)
        mem = m.read(N)
    with open(path, "rb") as lib:
        lib.seek(addr - lo + off)
        disk = lib.read(N)
    breakpoint = any(a == 0xCC and b != 0xCC for a, b in zip(mem, disk))
    print(json.dumps({"label": label, "pid": pid, "library": path, "memory": mem.hex(),
                      "file": disk.hex(), "same": mem == disk, "breakpoint": breakpoint}))


if __name__ == "__main__":
    main()
