"""docker/ and k8s/ checked offline: every Kubernetes object validates against the bundled
Kubernetes JSON schemas (kubernetes-validate, strict), KEDA objects against a structural schema,
every Celery queue has exactly one KEDA trigger on its list, every image is built by
docker/Dockerfile or pinned, and every command and probe names something that exists."""

from __future__ import annotations

import copy
import importlib
import importlib.util
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from pagefleet.workers.app import app
from pagefleet.workers.pdf.scratch import SCRATCH_SHM_MB
from pagefleet.workers.settings import QUEUES

kubernetes_validate = pytest.importorskip("kubernetes_validate")

ROOT = Path(__file__).resolve().parents[2]
K8S = ROOT / "k8s"
BASE = K8S / "base"
DOCKER = ROOT / "docker"
K8S_VERSION = "1.30"  # the oldest Kubernetes we support; strict: unknown fields are errors
KEDA_KINDS = {"ScaledObject", "TriggerAuthentication"}
PAGEFLEET_ENTRYPOINT = ["tini", "--", "pagefleet"]


def _mib(quantity: str) -> int:
    number, unit = re.fullmatch(r"(\d+)(Mi|Gi)", quantity).groups()  # type: ignore[union-attr]
    return int(number) << (10 if unit == "Gi" else 0)


# -- loading ---------------------------------------------------------------------------------------
def load_docs(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if d]


def kustomization(path: Path) -> dict[str, Any]:
    return yaml.safe_load((path / "kustomization.yaml").read_text(encoding="utf-8"))


def base_objects() -> list[dict[str, Any]]:
    return [doc for name in kustomization(BASE)["resources"] for doc in load_docs(BASE / name)]


def secret_keys() -> dict[str, set[str]]:
    """The keys of every Secret the base generates, from the env examples the operator copies."""
    from tests.support.kustomize import env_file

    keys: dict[str, set[str]] = {}
    for generator in kustomization(BASE).get("secretGenerator", []):
        for name in generator["envs"]:
            keys.setdefault(generator["name"], set()).update(env_file(BASE / f"{name}.example"))
    return keys


def by_kind(objects: list[dict[str, Any]], kind: str) -> dict[str, dict[str, Any]]:
    return {o["metadata"]["name"]: o for o in objects if o["kind"] == kind}


def object_id(obj: dict[str, Any]) -> str:
    return f"{obj['kind']}/{obj['metadata']['name']}"


def pod_spec(obj: dict[str, Any]) -> dict[str, Any]:
    return obj["spec"]["template"]["spec"]


def worker_queues(deployment: dict[str, Any]) -> list[str]:
    args = pod_spec(deployment)["containers"][0].get("args") or []
    return args[args.index("--queues") + 1].split(",") if "--queues" in args else []


def compose() -> dict[str, Any]:
    return yaml.safe_load((DOCKER / "compose.yaml").read_text(encoding="utf-8"))


def dockerfile_stages() -> set[str]:
    text = (DOCKER / "Dockerfile").read_text(encoding="utf-8")
    return set(
        re.findall(r"^FROM\s+\S+\s+AS\s+(\S+)\s*$", text, flags=re.MULTILINE | re.IGNORECASE)
    )


def interpolate(value: Any) -> Any:
    """Resolve compose's ${VAR:-default}, ${VAR:?error}, ${VAR} and $$ the way a default run would."""
    if isinstance(value, list):
        return [interpolate(v) for v in value]
    if not isinstance(value, str):
        return value

    def sub(match: re.Match[str]) -> str:
        name, op, default = match.group(1), match.group(2), match.group(3) or ""
        return (
            default if op == ":-" else f"test-{name.lower()}"
        )  # required or plain: a stand-in value

    text = re.sub(
        r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:-|:\?)([^}]*))?\}", sub, value.replace("$$", "\0")
    )
    return text.replace("\0", "$")


# -- kustomize structure ---------------------------------------------------------------------------
def test_kustomization_lists_every_base_file() -> None:
    listed = set(kustomization(BASE)["resources"])
    present = {p.name for p in BASE.glob("*.yaml")} - {"kustomization.yaml"}
    assert listed == present
    names = [object_id(o) for o in base_objects()]
    assert len(names) == len(set(names)), "duplicate objects in base"


@pytest.mark.parametrize("overlay", ["cpu-only", "gpu"])
def test_overlays_patch_objects_that_exist(overlay: str) -> None:
    directory = K8S / "overlays" / overlay
    config = kustomization(directory)
    assert config["resources"] == ["../../base"]
    known = {(o["kind"], o["metadata"]["name"]) for o in base_objects()}
    for patch in config.get("patches", []):
        for doc in load_docs(directory / patch["path"]):
            assert (doc["kind"], doc["metadata"]["name"]) in known, (overlay, patch)
    images = {i["name"] for i in config.get("images", [])}
    used = {
        c["image"].split(":")[0]
        for o in base_objects()
        if o["kind"] in ("Deployment", "StatefulSet")
        for c in pod_spec(o)["containers"]
    }
    assert images <= used


# -- schemas ---------------------------------------------------------------------------------------
CORE_OBJECTS = [o for o in base_objects() if o["kind"] not in KEDA_KINDS]


@pytest.mark.parametrize("obj", CORE_OBJECTS, ids=object_id)
def test_core_objects_validate_against_kubernetes_schemas(obj: dict[str, Any]) -> None:
    kubernetes_validate.validate(obj, K8S_VERSION, strict=True)


def test_schema_validation_catches_mistakes() -> None:
    deployment = copy.deepcopy(by_kind(base_objects(), "Deployment")["worker-split"])
    pod_spec(deployment)["terminationGracePeriodSecond"] = 720  # a typo
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(deployment, K8S_VERSION, strict=True)


_STRINGS = {"type": "object", "additionalProperties": {"type": "string"}}
_NAME_REF = {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}}
SCALED_OBJECT = {
    "type": "object",
    "required": ["apiVersion", "kind", "metadata", "spec"],
    "properties": {
        "apiVersion": {"const": "keda.sh/v1alpha1"},
        "spec": {
            "type": "object",
            "additionalProperties": False,
            "required": ["scaleTargetRef", "triggers"],
            "properties": {
                "scaleTargetRef": {
                    "type": "object",
                    "additionalProperties": False,
                    "required": ["name"],
                    "properties": {
                        "name": {"type": "string"},
                        "kind": {"type": "string"},
                        "apiVersion": {"type": "string"},
                        "envSourceContainerName": {"type": "string"},
                    },
                },
                "minReplicaCount": {"type": "integer", "minimum": 0},
                "maxReplicaCount": {"type": "integer", "minimum": 1},
                "idleReplicaCount": {"type": "integer", "minimum": 0},
                "pollingInterval": {"type": "integer", "minimum": 1},
                "cooldownPeriod": {"type": "integer", "minimum": 0},
                "advanced": {"type": "object"},
                "fallback": {"type": "object"},
                "triggers": {
                    "type": "array",
                    "minItems": 1,
                    "items": {
                        "type": "object",
                        "additionalProperties": False,
                        "required": ["type", "metadata"],
                        "properties": {
                            "type": {"type": "string"},
                            "name": {"type": "string"},
                            "metadata": _STRINGS,
                            "authenticationRef": _NAME_REF,
                            "metricType": {"enum": ["AverageValue", "Value", "Utilization"]},
                        },
                    },
                },
            },
        },
    },
}
REDIS_TRIGGER_KEYS = {
    "address",
    "addressFromEnv",
    "host",
    "hostFromEnv",
    "port",
    "portFromEnv",
    "usernameFromEnv",
    "passwordFromEnv",
    "listName",
    "listLength",
    "activationListLength",
    "enableTLS",
    "unsafeSsl",
    "databaseIndex",
}
TRIGGER_AUTH = {
    "type": "object",
    "required": ["apiVersion", "kind", "metadata", "spec"],
    "properties": {
        "apiVersion": {"const": "keda.sh/v1alpha1"},
        "spec": {
            "type": "object",
            "additionalProperties": False,
            "required": ["secretTargetRef"],
            "properties": {
                "secretTargetRef": {
                    "type": "array",
                    "minItems": 1,
                    "items": {
                        "type": "object",
                        "additionalProperties": False,
                        "required": ["parameter", "name", "key"],
                        "properties": {
                            "parameter": {"type": "string"},
                            "name": {"type": "string"},
                            "key": {"type": "string"},
                        },
                    },
                },
            },
        },
    },
}


def test_keda_objects_are_structurally_valid() -> None:
    objects = base_objects()
    for obj in by_kind(objects, "ScaledObject").values():
        jsonschema.validate(obj, SCALED_OBJECT)
        for trigger in obj["spec"]["triggers"]:
            assert trigger["type"] == "redis"
            assert set(trigger["metadata"]) <= REDIS_TRIGGER_KEYS, (
                set(trigger["metadata"]) - REDIS_TRIGGER_KEYS
            )
            assert {"listName", "listLength"} <= set(trigger["metadata"])
            assert (
                int(trigger["metadata"]["listLength"]) >= 1
                and int(trigger["metadata"]["activationListLength"]) >= 0
            )
    for obj in by_kind(objects, "TriggerAuthentication").values():
        jsonschema.validate(obj, TRIGGER_AUTH)


# -- queues, KEDA, Deployments ---------------------------------------------------------------------
def test_every_queue_has_exactly_one_keda_trigger_on_its_list() -> None:
    objects = base_objects()
    deployments, secrets, configs = (
        by_kind(objects, "Deployment"),
        secret_keys(),
        by_kind(objects, "ConfigMap"),
    )
    auths = by_kind(objects, "TriggerAuthentication")
    scaled = list(by_kind(objects, "ScaledObject").values())
    lists = [t["metadata"]["listName"] for s in scaled for t in s["spec"]["triggers"]]
    assert sorted(lists) == sorted(QUEUES), "one trigger per Celery queue, named like the queue"
    assert set(QUEUES) == {q.name for q in app.conf.task_queues}
    for obj in scaled:
        [trigger] = obj["spec"]["triggers"]
        target = deployments[obj["spec"]["scaleTargetRef"]["name"]]
        assert worker_queues(target) == [trigger["metadata"]["listName"]], (
            "the scaled Deployment consumes that list"
        )
        env_sources = [
            e["configMapRef"]["name"]
            for e in pod_spec(target)["containers"][0]["envFrom"]
            if "configMapRef" in e
        ]
        assert any(trigger["metadata"]["addressFromEnv"] in configs[n]["data"] for n in env_sources)
        for ref in auths[trigger["authenticationRef"]["name"]]["spec"]["secretTargetRef"]:
            assert ref["key"] in secrets[ref["name"]]


def test_gpu_scales_to_zero_while_restorers_stay_up() -> None:
    objects = base_objects()
    scaled = {
        s["spec"]["triggers"][0]["metadata"]["listName"]: s["spec"]
        for s in by_kind(objects, "ScaledObject").values()
    }
    assert scaled["gpu"]["minReplicaCount"] == 0
    assert all(scaled[q]["minReplicaCount"] >= 1 for q in QUEUES if q != "gpu"), (
        "something must restore unacked work"
    )
    gpu = pod_spec(by_kind(objects, "Deployment")["worker-gpu"])
    container = gpu["containers"][0]
    assert str(container["resources"]["limits"]["nvidia.com/gpu"]) == "1"
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in gpu[
        "tolerations"
    ]
    assert {"name": "PAGEFLEET_GPU__ENABLED", "value": "1"} in container["env"]
    pdbs = by_kind(objects, "PodDisruptionBudget")
    for queue in QUEUES:
        assert pdbs[f"worker-{queue}"]["spec"]["selector"]["matchLabels"] == {
            "app.kubernetes.io/component": f"worker-{queue}"
        }


def test_worker_shutdown_and_probes() -> None:
    hard_plus_soft = app.conf.task_time_limit + app.conf.worker_soft_shutdown_timeout
    deployments = [d for d in by_kind(base_objects(), "Deployment").values() if worker_queues(d)]
    assert sorted(q for d in deployments for q in worker_queues(d)) == sorted(QUEUES)
    for deployment in deployments:
        spec = pod_spec(deployment)
        assert spec["terminationGracePeriodSeconds"] >= hard_plus_soft, deployment["metadata"][
            "name"
        ]
        container = spec["containers"][0]
        assert container["livenessProbe"]["exec"]["command"] == [
            "python",
            "-m",
            "pagefleet.workers.fleet.heartbeat",
            "live",
        ]
        assert container["readinessProbe"]["exec"]["command"] == [
            "python",
            "-m",
            "pagefleet.workers.fleet.heartbeat",
            "ready",
        ]
        assert container["resources"]["requests"] and container["resources"]["limits"]["memory"]
        # the sandbox's scratch files in RAM: /dev/shm a tmpfs roomier than sandbox_scratch_shm_mb
        shm = next(m for m in container["volumeMounts"] if m["mountPath"] == "/dev/shm")
        volume = next(v for v in spec["volumes"] if v["name"] == shm["name"])["emptyDir"]
        assert volume["medium"] == "Memory" and _mib(volume["sizeLimit"]) >= SCRATCH_SHM_MB
    for path in [*K8S.rglob("*.yaml"), DOCKER / "compose.yaml"]:  # comments may explain why not
        assert "inspect" not in yaml.safe_dump_all(load_docs(path)), path


def test_flower_metrics_are_fenced_and_auth_is_required() -> None:
    objects = base_objects()
    flower = by_kind(objects, "Deployment")["flower"]
    labels = flower["spec"]["template"]["metadata"]["labels"]
    [policy] = by_kind(objects, "NetworkPolicy").values()
    assert policy["spec"]["podSelector"]["matchLabels"].items() <= labels.items()
    assert (
        policy["spec"]["policyTypes"] == ["Ingress"]
        and policy["spec"]["ingress"][0]["ports"][0]["port"] == 5555
    )
    sources = {
        e["secretRef"]["name"]
        for e in pod_spec(flower)["containers"][0]["envFrom"]
        if "secretRef" in e
    }
    assert any("FLOWER_BASIC_AUTH" in secret_keys()[name] for name in sources)
    assert "FLOWER_BASIC_AUTH" in compose()["services"]["flower"]["environment"]


# -- images and commands ---------------------------------------------------------------------------
PINNED = re.compile(r"^[a-z0-9./-]+(:[A-Za-z0-9._-]+)(@sha256:[0-9a-f]{64})?$")


def all_containers() -> list[tuple[str, str, list[str] | None, list[str] | None]]:
    """(where, image, command/entrypoint, args/command) for every container in k8s and compose."""
    found = []
    from tests.support.kustomize import pod_templates

    for obj in base_objects():
        for spec in pod_templates(obj):
            for c in [*spec.get("initContainers", []), *spec["containers"]]:
                found.append((object_id(obj), c["image"], c.get("command"), c.get("args")))
    for name, service in compose()["services"].items():
        entry = service.get("entrypoint")
        found.append(
            (
                f"compose/{name}",
                service["image"],
                [entry] if isinstance(entry, str) else entry,
                service.get("command"),
            )
        )
    return found


def test_images_are_built_here_or_pinned() -> None:
    stages = dockerfile_stages()
    assert {"base", "cpu", "gpu"} <= stages
    for where, image, _, _ in all_containers():
        image = interpolate(image)
        repo = image.split("@")[0].rsplit(":", 1)[0]
        if repo.rsplit("/", 1)[-1].startswith("pagefleet-"):
            assert repo.rsplit("/", 1)[-1].removeprefix("pagefleet-") in stages, (where, image)
        else:
            assert PINNED.match(image) and not image.endswith(":latest"), f"{where}: pin {image}"
    for name, service in compose()["services"].items():
        if "build" in service:
            assert service["build"]["target"] == interpolate(service["image"]).split(":")[
                0
            ].removeprefix("pagefleet-")
            assert (
                ROOT / "docker" / service["build"]["context"] / service["build"]["dockerfile"]
            ).resolve() == DOCKER / "Dockerfile"


def test_dockerfile_essentials() -> None:
    text = (DOCKER / "Dockerfile").read_text(encoding="utf-8")
    for package in (
        "tesseract-ocr-heb",
        "tesseract-ocr-ara",
        "tesseract-ocr-eng",
        "tesseract-ocr-osd",
        "poppler-utils",
        "fonts-dejavu-core",
    ):
        assert text.count(package) == 2, f"{package} in both runtime images"
    assert re.search(r"ARG CUDA_IMAGE=nvidia/cuda:\S+-runtime-\S+", text)
    assert (
        text.count('ENTRYPOINT ["tini", "--", "pagefleet"]') == 2 and text.count("USER 10001") == 2
    )
    assert not (ROOT / "requirements-gpu.txt").exists(), (
        "the gpu extra replaces the side requirements file"
    )
    assert "[ops,gpu]" in text and "libgl1" in text, (
        "the gpu image installs pagefleet[gpu] and the libraries its engines link"
    )
    assert "COPY pyproject.toml README.md LICENSE" in text
    # both runtime images compile the gate with the mypy the project pins (the build is part of the product)
    pinned = re.search(r'"(mypy==[^"]+)"', (ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert (
        pinned
        and text.count(f"pip install {pinned.group(1)}") == 2
        and text.count("pagefleet.routing.compiled import build") == 2
    )


def test_an_image_can_carry_its_weights() -> None:
    """The gpu-models stage: weights from a named build context, verified at build time, used offline."""
    text = (DOCKER / "Dockerfile").read_text(encoding="utf-8")
    stage = text[text.index("FROM gpu AS gpu-models") :]
    assert "gpu-models" in dockerfile_stages() and "ARG MODELS_VERSION" in stage
    assert (
        "COPY --from=models . /models" in stage and "RUN pagefleet models verify /models" in stage
    )
    assert "PAGEFLEET_OCR__MODELS__DIR=/models" in stage and "HF_HUB_OFFLINE=1" in stage


def test_licence_is_compatible_with_pymupdf() -> None:
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["license"] == "AGPL-3.0-or-later", (
        "PyMuPDF is AGPL-3.0: a weaker licence is not compatible"
    )
    assert (
        "GNU AFFERO GENERAL PUBLIC LICENSE" in (ROOT / "LICENSE").read_text(encoding="utf-8")[:200]
    )
    gpu = " ".join(project["optional-dependencies"]["gpu"])
    assert "torch==" in gpu and "transformers==" in gpu


def _argv(command: list[str] | None, args: list[str] | None, image: str) -> list[str]:
    ours = image.split("/")[-1].startswith("pagefleet-")
    entry = command if command is not None else (PAGEFLEET_ENTRYPOINT if ours else [])
    argv = [*entry, *(args or [])]
    return argv[2:] if argv[:2] == ["tini", "--"] else argv


def _check_pagefleet(argv: list[str], env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    from pagefleet.workers.cli.main import parser

    try:
        args = parser().parse_args(argv)
    except SystemExit as exc:
        raise AssertionError(f"pagefleet rejects {argv}") from exc
    if args.command == "worker":
        assert set(args.queues.split(",")) <= set(QUEUES), argv
    if args.command == "events":
        from pagefleet.workers.cli.event_receiver import event_settings

        for key, value in env.items():
            monkeypatch.setenv(key, value)
        settings = event_settings(args)
        assert settings.output, argv
        assert settings.inbox_list, (
            f"deployed receivers batch a burst's uploads (--inbox-list): {argv}"
        )


def _check_celery(argv: list[str]) -> None:
    assert argv[1:3] == ["-A", "pagefleet.workers.app"], argv
    importlib.import_module("pagefleet.workers.app")
    subcommand, options = argv[3], argv[4:]
    if subcommand == "beat":
        names = [o for o in options if o.startswith("-")]
        assert set(names) <= {"--schedule", "--loglevel"}, argv
        return
    assert subcommand == "flower", argv
    from flower.options import options as flower_options

    for option in options:
        name = option.lstrip("-").split("=", 1)[0]
        assert (
            name in flower_options._options or name.replace("_", "-") in flower_options._options
        ), option


def _container_env(where: str) -> dict[str, str]:
    if where.startswith("compose/"):
        env = compose()["services"][where.split("/", 1)[1]].get("environment") or {}
        return {k: str(interpolate(v)) for k, v in env.items()}
    env: dict[str, str] = {}
    for config in by_kind(base_objects(), "ConfigMap").values():
        env.update(config["data"])
    return env


@pytest.mark.parametrize(
    "where, image, command, args", all_containers(), ids=lambda v: v if isinstance(v, str) else ""
)
def test_commands_exist(
    where: str, image: str, command, args, monkeypatch: pytest.MonkeyPatch
) -> None:
    argv = [str(a) for a in interpolate(_argv(command, args, image))]
    if not argv:
        return  # a third-party image's own entrypoint
    if argv[0] == "pagefleet":
        _check_pagefleet(argv[1:], _container_env(where), monkeypatch)
    elif argv[0] == "celery":
        _check_celery(argv)
    elif argv[0] == "/bin/sh":
        assert "mc event add" in argv[-1]
    else:
        assert argv[0] in ("redis-server", "server") or argv[0].startswith("--"), argv


def _probe_commands() -> list[list[str]]:
    commands = []
    for obj in base_objects():
        if obj["kind"] in ("Deployment", "StatefulSet"):
            for c in pod_spec(obj)["containers"]:
                commands += [
                    c[p]["exec"]["command"]
                    for p in ("livenessProbe", "readinessProbe", "startupProbe")
                    if p in c and "exec" in c[p]
                ]
    for service in compose()["services"].values():
        test = (service.get("healthcheck") or {}).get("test")
        if test and test[0] == "CMD":
            commands.append(test[1:])
    return commands


def test_probe_commands_exist() -> None:
    commands = _probe_commands()
    assert len(commands) >= 10
    for command in commands:
        if command[:2] == ["python", "-m"]:
            assert importlib.util.find_spec(command[2]) is not None and command[3] in (
                "live",
                "ready",
            ), command
        elif command[:2] == ["python", "-c"]:
            compile(command[2], "<healthcheck>", "exec")
        else:
            assert command[0] in ("sh", "mc"), command


# compose: tests/unit/test_compose.py
# rendered overlays: tests/unit/test_overlays.py
