"""Kubernetes manifests that run a campaign on a cluster with a solution's image
(docs/containers.md): the campaign cluster of docs/campaigns.md, as resources.

    scheduler.yaml       Deployment + Service: `cr scheduler` on port 8786
    worker-NAME.yaml     per platform target: a Deployment of `cr worker`s whose nodeSelector,
                         resources and GPU limits come from the target's marker and capabilities
    results-volume.yaml  PersistentVolumeClaim: the coordinator's results store and campaign
                         journal, so they outlive its pod (kept apart so deleting the rest keeps it)
    campaign.yaml        ConfigMap (the campaign's meta.json) + Job: `cr campaign run` against
                         the scheduler, waiting for every worker
    fetch/results-reader.yaml
                         a Pod that mounts the results volume, to copy the results out once the
                         Job ends (in a subfolder: `kubectl apply -f DIR` does not start it)

Every pod talks mutual TLS with the certificates of a Secret the user creates (TLS_FILES,
mounted read-only at TLS_DIR; docs/clusters.md makes them), the same --tls-* options as
outside Kubernetes; without TLS only when asked (insecure). Written as JSON documents in
.yaml files (JSON is YAML): kubectl apply -f DIR reads them, and no YAML library is needed.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

from ..campaign.link import INSECURE_FLAG
from ..errors import CRError
from .image import HOME

PORT = 8786
APP = "reefkit"
TLS_DIR = "/etc/reefkit/tls"
TLS_FILES = {"--tls-ca-file": "ca.pem", "--tls-cert": "node.pem", "--tls-key": "node.key"}  # option -> key in the Secret
RESULTS_SIZE = "5Gi"  # ~2,000 benchmark records with their raw latencies (a few hundred KiB to 2 MiB each)
# a Kubernetes quantity as a volume size: a positive number with a binary or decimal suffix
_QUANTITY = re.compile(r"^(?:\d+(?:\.\d*)?|\.\d+)(?:Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E)?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")

# capability -> node label (well-known labels where Kubernetes or a vendor defines one)
_ARCH = {"x86_64": "amd64", "aarch64": "arm64", "armv7l": "arm"}
_GPU_CAPS = {"gpu", "nvidia-gpu", "cuda"}


def _dns(text: str) -> str:
    """A DNS-1123 label from text (lowercase, digits, '-'; at most 63 characters)."""
    out = re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-")
    return (out or "x")[:63].rstrip("-")


def node_selector(target: dict) -> dict:
    """nodeSelector of a platform target: kubernetes.io/arch from an architecture (named in
    `requires` or in a `platform_machine == '...'` marker), nvidia.com/gpu.present for a GPU,
    and reefkit.dev/CAPABILITY=true for every other capability (label your nodes so)."""
    sel = {"kubernetes.io/os": "linux"}
    marker = target.get("marker") or ""
    m = re.search(r"platform_machine\s*==\s*['\"]([A-Za-z0-9_]+)['\"]", marker)
    if m and m.group(1) in _ARCH:
        sel["kubernetes.io/arch"] = _ARCH[m.group(1)]
    for cap in target.get("requires") or []:
        if cap in _ARCH:
            sel["kubernetes.io/arch"] = _ARCH[cap]
        elif cap in _GPU_CAPS:
            sel["nvidia.com/gpu.present"] = "true"
        elif cap != "linux":
            sel[f"reefkit.dev/{_dns(cap)}"] = "true"
    return sel


def _labels(campaign: str, role: str, platform: str | None = None) -> dict:
    out = {"app.kubernetes.io/name": APP, "app.kubernetes.io/component": role, "reefkit.dev/campaign": _dns(campaign)}
    if platform:
        out["reefkit.dev/platform"] = _dns(platform)
    return out


def _container(name: str, image: str, args: list[str], resources: dict | None = None, env: list | None = None) -> dict:
    c = {"name": name, "image": image, "imagePullPolicy": "IfNotPresent", "command": ["cr"], "args": args}
    if resources:
        c["resources"] = resources
    if env:
        c["env"] = env
    return c


def names(campaign_name: str, namespace: str = "default") -> dict:
    """The resource names an export of campaign_name uses: base, scheduler (its Service),
    tls_secret (the default Secret), results (the volume claim), and service_dns: the names
    the scheduler's certificate should carry (subjectAltName)."""
    base = _dns(f"cr-{campaign_name}")[:40].rstrip("-")
    sched = f"{base}-scheduler"
    return {"base": base, "scheduler": sched, "tls_secret": f"{base}-tls", "results": f"{base}-results",
            "service_dns": [sched, f"{sched}.{namespace}", f"{sched}.{namespace}.svc", f"{sched}.{namespace}.svc.cluster.local"]}


def tls_args() -> list[str]:
    """The --tls-* options of every container: the Secret's files where it is mounted."""
    return [a for opt, key in TLS_FILES.items() for a in (opt, f"{TLS_DIR}/{key}")]


def manifests(campaign_meta: dict, image: str, namespace: str = "default", cpu: str = "2", memory: str = "4Gi",
              workers: int = 1, tls_secret: str | None = "", results_size: str = RESULTS_SIZE,
              storage_class: str | None = None) -> dict[str, list[dict]]:
    """{file name: [resources]} for the campaign described by campaign_meta. tls_secret: the
    Secret holding TLS_FILES ("" for the default name, None for a cluster without TLS)."""
    name = campaign_meta["name"]
    n = names(name, namespace)
    base, sched = n["base"], n["scheduler"]
    insecure = tls_secret is None
    addr = f"{'tcp' if insecure else 'tls'}://{sched}.{namespace}.svc:{PORT}"
    security = [INSECURE_FLAG] if insecure else tls_args()
    tls_volume = [] if insecure else [{"name": "tls", "secret": {"secretName": tls_secret or n["tls_secret"], "defaultMode": 0o400}}]
    tls_mount = [] if insecure else [{"name": "tls", "mountPath": TLS_DIR, "readOnly": True}]
    digest = image.split("@", 1)[1] if "@" in image else ""
    env = [{"name": "REEFKIT_IMAGE_DIGEST", "value": digest}] if digest.startswith("sha256:") else []
    meta = lambda n, labels: {"name": n, "namespace": namespace, "labels": labels}  # noqa: E731
    out: dict[str, list[dict]] = {}

    sl = _labels(name, "scheduler")
    out["scheduler.yaml"] = [
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta(sched, sl),
         "spec": {"replicas": 1, "selector": {"matchLabels": sl},
                  "template": {"metadata": {"labels": sl}, "spec": {"volumes": tls_volume, "containers": [{
                      **_container("scheduler", image, ["scheduler", "--host", "0.0.0.0", "--port", str(PORT), *security],
                                   {"requests": {"cpu": "250m", "memory": "256Mi"}, "limits": {"cpu": "1", "memory": "1Gi"}}, env),
                      "ports": [{"name": "scheduler", "containerPort": PORT, "protocol": "TCP"}],
                      "volumeMounts": tls_mount,
                      "readinessProbe": {"tcpSocket": {"port": PORT}, "periodSeconds": 5}}]}}}},
        {"apiVersion": "v1", "kind": "Service", "metadata": meta(sched, sl),
         "spec": {"selector": sl, "ports": [{"name": "scheduler", "port": PORT, "targetPort": PORT, "protocol": "TCP"}]}},
    ]

    targets = dict(campaign_meta.get("platforms") or {}) or {"any": {}}
    for pname in sorted(targets):
        target = targets[pname] or {}
        wl = _labels(name, "worker", pname)
        gpu = bool(_GPU_CAPS & set(target.get("requires") or []))
        # requests == limits: the Guaranteed QoS class, so a benchmark's cores are its own
        res = {"requests": {"cpu": cpu, "memory": memory}, "limits": {"cpu": cpu, "memory": memory}}
        if gpu:
            res["limits"]["nvidia.com/gpu"] = 1
            res["requests"]["nvidia.com/gpu"] = 1
        out[f"worker-{_dns(pname)}.yaml"] = [
            {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta(f"{base}-worker-{_dns(pname)}"[:63].rstrip("-"), wl),
             "spec": {"replicas": workers, "selector": {"matchLabels": wl},
                      "template": {"metadata": {"labels": wl}, "spec": {
                          "nodeSelector": node_selector(target), "volumes": tls_volume,
                          "containers": [{**_container("worker", image, ["worker", "--scheduler", addr, *security], res, env),
                                          "volumeMounts": tls_mount}]}}}},
        ]

    version = campaign_meta.get("version", "0.1.0")
    repo = {"name": f"campaign-{_dns(name)}", "uid": campaign_meta.get("uid", "0" * 16), "version": "1.0.0"}
    folder = f"/tmp/campaign-repo/campaign/{name}/{version}"
    script = (f"mkdir -p {folder} && cp /campaign/meta.json {folder}/meta.json && cp /campaign/cr-repo.json /tmp/campaign-repo/ "
              f"&& cr repo add /tmp/campaign-repo && exec cr campaign run {name} --scheduler {addr} "
              f"--wait-for-workers {workers * len(targets)} --timeout 600 {' '.join(security)}")
    cl = _labels(name, "coordinator")
    rl = _labels(name, "results")
    claim = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": meta(n["results"], rl),
             "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": results_size}}}}
    if storage_class:  # else the cluster's default StorageClass
        claim["spec"]["storageClassName"] = storage_class
    out["results-volume.yaml"] = [claim]
    # the results store (CR_HOME/results) and the campaign journals (CR_HOME/campaigns: a rerun
    # of the Job resumes) on the claim; the rest of CR_HOME stays the image's
    store = [{"name": "results", "mountPath": f"{HOME}/{sub}", "subPath": sub} for sub in ("results", "campaigns")]
    home = [{"name": "CR_HOME", "value": HOME}]
    results_volume = {"name": "results", "persistentVolumeClaim": {"claimName": n["results"]}}
    out["campaign.yaml"] = [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta(f"{base}-campaign", cl),
         "data": {"meta.json": json.dumps(campaign_meta, indent=1, sort_keys=True), "cr-repo.json": json.dumps(repo, sort_keys=True)}},
        {"apiVersion": "batch/v1", "kind": "Job", "metadata": meta(f"{base}-run", cl),
         "spec": {"backoffLimit": 0, "template": {"metadata": {"labels": cl}, "spec": {
             "restartPolicy": "Never",
             "volumes": [{"name": "campaign", "configMap": {"name": f"{base}-campaign"}}, results_volume, *tls_volume],
             "containers": [{**_container("coordinator", image, [], {"requests": {"cpu": "250m", "memory": "512Mi"}}, env + home),
                             "command": ["/bin/sh", "-c", script],
                             "volumeMounts": [{"name": "campaign", "mountPath": "/campaign", "readOnly": True}, *store, *tls_mount]}]}}}},
    ]
    # started by hand once the Job has ended: `kubectl exec` into it to read the store (docs/clusters.md)
    out["fetch/results-reader.yaml"] = [
        {"apiVersion": "v1", "kind": "Pod", "metadata": meta(f"{base}-results", rl),
         "spec": {"restartPolicy": "Never", "volumes": [results_volume],
                  "containers": [{**_container("reader", image, [], {"requests": {"cpu": "100m", "memory": "256Mi"}}, home),
                                  "command": ["sleep", "86400"], "volumeMounts": store}]}},
    ]
    return out


def check_options(namespace: str, tls_secret: str | None, results_size: str, storage_class: str | None) -> None:
    """CRError naming the option and the value for what Kubernetes would refuse (or misread)."""
    if not re.match(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", namespace) or len(namespace) > 63:
        raise CRError(f"--namespace {namespace!r}: not a Kubernetes namespace name", hint="lowercase letters, digits and '-', at most 63")
    for option, value in (("--tls-secret", tls_secret), ("--storage-class", storage_class)):
        if value and (not _DNS_SUBDOMAIN.match(value) or len(value) > 253):
            raise CRError(f"{option} {value!r}: not a Kubernetes object name",
                          hint="lowercase letters, digits, '-' and '.', starting and ending with a letter or digit")
    if not _QUANTITY.match(results_size or "") or not re.search(r"[1-9]", results_size.rstrip("KMGTPEik")):
        raise CRError(f"--results-size {results_size!r}: not a volume size",
                      hint=f"give a Kubernetes quantity such as {RESULTS_SIZE}, 500Mi or 20G")


def export_campaign(ref: str, out_dir: str, image: str, namespace: str = "default", cpu: str = "2",
                    memory: str = "4Gi", workers: int = 1, tls_secret: str | None = "", results_size: str = RESULTS_SIZE,
                    storage_class: str | None = None) -> dict:
    """Write manifests() of campaign ref into out_dir (new or empty): {campaign, dir, files,
    image, tls, results}. tls_secret None: no TLS (the user's --insecure-no-tls)."""
    from ..campaign.spec import load
    from ..fsutil import atomic_write_bytes
    from .image import check_target

    if not re.match(r"^[A-Za-z0-9][A-Za-z0-9._/:@+-]*$", image or "") or " " in image:
        raise CRError(f"--image {image!r}: not an image reference", hint="give registry/name:tag or registry/name@sha256:DIGEST")
    check_options(namespace, tls_secret, results_size, storage_class)
    campaign = load(ref)
    target = Path(out_dir)
    check_target(target, "--k8s")
    docs = manifests(campaign.meta, image, namespace, cpu, memory, workers, tls_secret, results_size, storage_class)
    made = not target.exists()
    target.mkdir(parents=True, exist_ok=True)
    written = []
    try:
        for fname in sorted(docs):
            (target / fname).parent.mkdir(exist_ok=True)
            body = "".join("---\n" + json.dumps(d, indent=2, sort_keys=True) + "\n" for d in docs[fname])
            atomic_write_bytes(target / fname, body.encode())
            written.append(fname)
    except BaseException:
        for fname in written:
            (target / fname).unlink(missing_ok=True)
        for sub in sorted({(target / f).parent for f in docs} - {target}, reverse=True):
            if sub.is_dir() and not any(sub.iterdir()):
                sub.rmdir()
        if made:
            target.rmdir()
        raise
    n = names(campaign.meta["name"], namespace)
    tls = None if tls_secret is None else {"secret": tls_secret or n["tls_secret"], "files": list(TLS_FILES.values()),
                                           "mounted_at": TLS_DIR, "service_dns": n["service_dns"]}
    return {"campaign": campaign.ref, "dir": str(target), "files": written, "image": image, "tls": tls,
            "results": {"claim": n["results"], "size": results_size, "storage_class": storage_class,
                        "mounted_at": f"{HOME}/results", "reader": n["results"]}}
