"""Why two runs differ: the likely causes of a difference beyond noise, ranked, from the records.

Each check looks at one thing both records say, and names it when the two differ in a way
that moves latency. They are ranked in this fixed order, most decisive first:

    1. different platform            another machine (fingerprint): everything may differ
    2. different configuration       thread count, batch size, variant or precision, backend,
                                     backend options, scenario, engine, inputs (one cause each)
    3. different software versions   the locks' software, or the backend's framework version
    4. throttling                    a run the machine throttled (machine.summary.throttled)
    5. background CPU load           other processes used more than BUSY_SHARE of the machine's
                                     CPU during a run and LOAD_GAP more than during the other
                                     (machine.summary.cpu_other_share)
    6. different CPU governor        machine.summary.governor
    7. different CPU frequency       machine.summary.freq_mhz_max differing by more than 5%
    8. swapping                      machine.summary.swap_activity in one run
    9. temperature                   machine.summary.temp_c_max differing by more than 10 C

Machine-state causes that point the wrong way (the busier or throttled run is the faster
one) are left out: they do not explain the difference. A record without a machine summary
cannot be checked for 4-9; state_notes() says so instead of guessing.
"""
from __future__ import annotations

BUSY_SHARE = 0.10
LOAD_GAP = 0.05
FREQ_GAP = 0.05
TEMP_GAP_C = 10.0

_CONFIG_CAUSES = (
    ("threads", "different thread count"),
    ("batch_size", "different batch size"),
    ("variant", "different model variant"),
    ("precision", "different precision"),
    ("backend", "different backend"),
    ("backend_options", "different backend options"),
    ("scenario", "different scenario"),
    ("engine", "different engine"),
    ("samples_per_query", "different samples per query"),
    ("target_qps", "different target rate"),
    ("inputs", "different inputs"),
    ("include_preprocess", "pre-processing timed in one run only"),
    ("dataset", "different dataset"),
)


def _summary(record: dict) -> dict | None:
    machine = record.get("machine")
    summary = machine.get("summary") if isinstance(machine, dict) else None
    return summary if isinstance(summary, dict) else None


def _num(value):
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _slower_side(pair: dict) -> str | None:
    """'a' or 'b': the run the verdicts say is slower; None when they disagree or say nothing."""
    sides = set()
    for m in pair.get("metrics") or []:
        if m.get("verdict") == "slower":
            sides.add("b")
        elif m.get("verdict") == "faster":
            sides.add("a")
    return sides.pop() if len(sides) == 1 else None


def _stack(record: dict) -> dict:
    out = {}
    lock = record.get("lock")
    if isinstance(lock, dict) and isinstance(lock.get("software"), list):
        out = {s.get("name"): s.get("version") for s in lock["software"] if isinstance(s, dict) and s.get("name")}
    backend = record.get("backend") if isinstance(record.get("backend"), dict) else {}
    info = backend.get("info") if isinstance(backend.get("info"), dict) else {}
    if info.get("framework") and info.get("version"):
        out.setdefault(str(info["framework"]), info["version"])
    return out


def likely_causes(a: dict, b: dict, pair: dict | None = None) -> list[dict]:
    """[{"cause", "detail", "rank"}] of what differs between baseline a and b, ranked (see the
    module's doc); pair (cr.results.significance.compare_pair) gives the direction."""
    from .summary import config_fields, field_name, field_value, summarize

    causes: list[tuple[int, str, str]] = []
    slower = _slower_side(pair or {})
    sa, sb = summarize(a), summarize(b)
    if sa["platform"] and sb["platform"] and sa["platform"] != sb["platform"]:
        causes.append((1, "different platform", f"{sa['platform_description'] or sa['platform']} (A) vs "
                                                f"{sb['platform_description'] or sb['platform']} (B)"))
    fa, fb = config_fields(a), config_fields(b)
    for field, cause in _CONFIG_CAUSES:
        if fa.get(field) != fb.get(field):
            causes.append((2, cause, f"{field_name(field)} {field_value(fa.get(field))} (A) vs {field_value(fb.get(field))} (B)"))
    ka, kb = _stack(a), _stack(b)
    differ = [n for n in sorted(set(ka) & set(kb), key=str) if ka[n] != kb[n] and n != "python"]
    if differ:
        causes.append((3, "different software versions", ", ".join(f"{n} {ka[n]} (A) vs {kb[n]} (B)" for n in differ)))
    ma, mb = _summary(a), _summary(b)
    if ma is not None and mb is not None:
        causes += _machine_causes(ma, mb, slower)
    return [{"cause": c, "detail": d, "rank": i} for i, (_, c, d) in enumerate(sorted(causes, key=lambda x: x[0]), 1)]


def _fits(side: str, slower: str | None) -> bool:
    """Whether a state found in run side can explain the difference (it is the slower run)."""
    return slower is None or slower == side


def _machine_causes(ma: dict, mb: dict, slower: str | None) -> list[tuple[int, str, str]]:
    out = []
    ta, tb = ma.get("throttled"), mb.get("throttled")
    if (ta is True) != (tb is True) and (ta is True or tb is True):
        side = "a" if ta is True else "b"
        if _fits(side, slower):
            out.append((4, "throttling", f"the machine was throttled during {side.upper()} (max temperature "
                                         f"{ma.get('temp_c_max')} C (A) vs {mb.get('temp_c_max')} C (B))"))
    la, lb = _num(ma.get("cpu_other_share")), _num(mb.get("cpu_other_share"))
    if la is not None and lb is not None and max(la, lb) > BUSY_SHARE and abs(la - lb) > LOAD_GAP:
        side = "a" if la > lb else "b"
        if _fits(side, slower):
            out.append((5, "background CPU load", f"other processes used {100 * la:.0f}% of the machine's CPU during A vs "
                                                  f"{100 * lb:.0f}% during B (a run is busy above {100 * BUSY_SHARE:.0f}%)"))
    ga, gb = ma.get("governor"), mb.get("governor")
    if ga and gb and ga != gb and "unknown" not in (ga, gb):
        out.append((6, "different CPU governor", f"{ga} (A) vs {gb} (B)"))
    fa, fb = _num(ma.get("freq_mhz_max")), _num(mb.get("freq_mhz_max"))
    if fa and fb and abs(fa - fb) > FREQ_GAP * max(fa, fb):
        side = "a" if fa < fb else "b"
        if _fits(side, slower):
            out.append((7, "different CPU frequency", f"highest core frequency {fa:.0f} MHz (A) vs {fb:.0f} MHz (B)"))
    wa, wb = ma.get("swap_activity"), mb.get("swap_activity")
    if (wa is True) != (wb is True) and (wa is True or wb is True):
        side = "a" if wa is True else "b"
        if _fits(side, slower):
            out.append((8, "swapping", f"the machine swapped during {side.upper()}"))
    ca, cb = _num(ma.get("temp_c_max")), _num(mb.get("temp_c_max"))
    if ca is not None and cb is not None and abs(ca - cb) > TEMP_GAP_C and not any(c[1] == "throttling" for c in out):
        side = "a" if ca > cb else "b"
        if _fits(side, slower):
            out.append((9, "temperature", f"highest temperature {ca:.0f} C (A) vs {cb:.0f} C (B)"))
    return out


def state_notes(a: dict, b: dict) -> list[str]:
    """What could not be checked: runs whose record holds no machine summary."""
    lacking = [r.get("uid") for r in (a, b) if _summary(r) is None]
    if not lacking:
        return []
    return [f"no machine state recorded in {', '.join(str(u) for u in lacking)}: governor, frequency, throttling and "
            f"background load cannot be checked as causes"]
