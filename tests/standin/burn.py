"""Stand-in Python process for the stack sampling tests: spends the given
seconds of CPU time (argv[1], default 1.5; thread CPU time, so a busy machine
stretches the wall time, not the work) in the pure-Python function
ingero_py_spin, called from ingero_py_outer, then prints how many rounds it
made."""
import sys
import time


def ingero_py_spin(n):
    x = 0
    for i in range(n):
        x = (x * 31 + i) % 1000003
    return x


def ingero_py_outer(seconds):
    rounds = 0
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        ingero_py_spin(20000)
        rounds += 1
    return rounds


if __name__ == "__main__":
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 1.5
    print(f"burn.py rounds={ingero_py_outer(seconds)}", flush=True)
