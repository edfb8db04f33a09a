"""cr export: a solution as an OCI image, a campaign as Kubernetes manifests (docs/containers.md)."""
from __future__ import annotations

import click

from . import output


@click.group()
def export():
    """Export to where users already run things: OCI images, Kubernetes."""


def _ref(kind: str, name: str) -> str:
    return name if ":" in name else f"{kind}:{name}"


@export.command("solution")
@click.argument("name")
@click.option("--oci", "oci_dir", type=click.Path(file_okay=False), help="Write the image as an OCI image layout into this new or empty directory.")
@click.option("--docker-archive", type=click.Path(dir_okay=False), help="Write the image as a `docker save` tar (docker load / podman load).")
@click.option("--arch", type=click.Choice(["amd64", "arm64"]), help="Image architecture (default: this machine's); the solution needs a lock made on one.")
@click.option("--tag", help="Image name:tag recorded in the image (default reefkit/NAME:VERSION).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def solution(name, oci_dir, docker_archive, arch, tag, as_json):
    """Build the OCI image of solution NAME from its lock: a Debian root, Python, reefkit and
    exactly the locked software; its default command is `cr benchmark solution NAME`."""
    from ..archive.limits import human
    from ..export.image import export_solution

    if not oci_dir and not docker_archive:
        raise click.UsageError("give --oci DIR and/or --docker-archive FILE")
    summary = export_solution(_ref("solution", name), oci_dir, docker_archive, arch, tag)
    if as_json:
        output.emit_json(summary)
        return
    click.echo(f"exported {summary['solution']} ({summary['arch']}) as {summary['tag']}")
    click.echo(f"  digest {summary['digest']}  ({human(summary['size'])} compressed, {summary['seconds']} s)")
    for layer in summary["layers"]:
        click.echo(f"  {human(layer['size']):>10}  {output.clean(layer['comment'])[:100]}")
    for where in ("oci", "docker_archive"):
        if summary.get(where):
            click.echo(f"  {where.replace('_', '-')}: {summary[where]}")
    click.echo(f"  run: podman run --network=none -e REEFKIT_IMAGE_DIGEST={summary['digest']} IMAGE")


@export.command("campaign")
@click.argument("name")
@click.option("--k8s", "k8s_dir", required=True, type=click.Path(file_okay=False), help="Write the manifests into this new or empty directory.")
@click.option("--image", required=True, help="The image reference (registry/name@sha256:... from cr export solution --oci, pushed).")
@click.option("--namespace", default="default", show_default=True, help="Kubernetes namespace.")
@click.option("--cpu", default="2", show_default=True, help="CPU request (= limit) of each worker.")
@click.option("--memory", default="4Gi", show_default=True, help="Memory request (= limit) of each worker.")
@click.option("--workers", default=1, show_default=True, type=click.IntRange(1, 1000), help="Workers per platform target.")
@click.option("--tls-secret", metavar="NAME", help="The Secret with ca.pem, node.pem and node.key that every pod mounts "
                                                     "(default cr-CAMPAIGN-tls; docs/clusters.md makes it).")
@click.option("--insecure-no-tls", "insecure", is_flag=True,
              help="Run the cluster without TLS: any pod that reaches the scheduler's Service can join as a worker "
                   "(getting every job's archive, returning false results) or submit jobs, and read or change what crosses.")
@click.option("--results-size", default="5Gi", show_default=True, help="Size of the volume claim holding the coordinator's results store.")
@click.option("--storage-class", metavar="NAME", help="StorageClass of the results volume (default: the cluster's default).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def campaign(name, k8s_dir, image, namespace, cpu, memory, workers, tls_secret, insecure, results_size, storage_class, as_json):
    """Write Kubernetes manifests that run campaign NAME on a cluster with IMAGE: a scheduler
    Deployment + Service, a worker Deployment per platform target, the campaign's Job, and a
    volume claim for its results. Every pod speaks TLS with the certificates of a Secret you
    create (docs/clusters.md), unless --insecure-no-tls."""
    from ..errors import CRError
    from ..export.k8s import export_campaign

    if insecure and tls_secret:
        raise CRError(f"--tls-secret {tls_secret} and --insecure-no-tls: a cluster is either with TLS or without",
                      hint="leave out --insecure-no-tls (or --tls-secret)")
    summary = export_campaign(_ref("campaign", name), k8s_dir, image, namespace=namespace, cpu=cpu, memory=memory,
                              workers=workers, tls_secret=None if insecure else (tls_secret or ""),
                              results_size=results_size, storage_class=storage_class)
    if insecure:
        output.warn("--insecure-no-tls: the exported cluster runs WITHOUT TLS: any pod that reaches the scheduler's "
                    "Service can join as a worker or submit jobs, and read or change archives and results on the way "
                    "(restrict it with a NetworkPolicy; docs/security.md)")
    if as_json:
        output.emit_json(summary)
        return
    click.echo(f"wrote {len(summary['files'])} manifests for {summary['campaign']} into {summary['dir']}")
    for f in summary["files"]:
        click.echo(f"  {f}")
    tls = summary["tls"]
    if tls:
        click.echo(f"  TLS: create Secret {tls['secret']} with {', '.join(tls['files'])} first; the scheduler's certificate "
                   f"names its Service: subjectAltName=" + ",".join(f"DNS:{d}" for d in tls["service_dns"]) + " (docs/clusters.md)")
    res = summary["results"]
    click.echo(f"  results: volume claim {res['claim']} ({res['size']}) at {res['mounted_at']}; "
               f"read them with {summary['dir']}/fetch/results-reader.yaml once the Job ends")
    click.echo(f"  apply: kubectl apply -f {summary['dir']}")
