"""Rules from a trained model, and the files that carry them: roam's rules file
(docs/guide/collectives.md, "The rules file") and MPICH's collective-selection JSON.

Emission (thesis 3.9.3, Fig. 3.16), at each level (comm_size, then ppn, then msg_size) over
the candidates' powers of two: take each value's choice (at the message-size level the
model's best choice; above it, the whole subtree of rules below); where the choice changes
between adjacent values A < C, ask the model at B, the whole number halfway between (a
non-power of two), and write three rules: values <= A take A's choice, values < C (that is
<= C - 1) take B's, values >= C take C's. Pruning: adjacent rules with the same choice merge
(A's = B's gives one rule up to C - 1; B's = C's one rule from A + 1 on), and the last rule
of a level becomes "=any", so that every call finds a rule.

A label "alg:P" (the radix equal to the rank count) is written with k = the comm_size rule's
bound (any radix at or above the rank count acts as it), and under "comm_size=any" with the
largest rank count the tuner saw.
"""

import json

from .space import COLLECTIVES, Point, label, midpoint, parse_label

ANY = None  # the bound of a "name=any" rule
FALLBACK = "knomial:2"  # roam's default for collectives the tuner did not tune: binomial


def level(values, make):
    """The rules of one level: [(bound, choice)], choice = make(value) (a label or a
    subtree), with the A/B/C midpoints and pruning; the last bound is ANY."""
    values = sorted(values)
    made = {}

    def at(v):
        if v not in made:
            made[v] = make(v)
        return made[v]

    rules = []
    for i, a in enumerate(values):
        rules.append((a, at(a)))
        if i + 1 < len(values):
            c = values[i + 1]
            if at(c) != at(a):
                b = midpoint(a, c)
                if b is not None:
                    rules.append((c - 1, at(b)))
    return prune(rules)


def prune(rules):
    """Adjacent rules with the same choice merged (the later bound kept); the last bound
    ANY."""
    out = []
    for bound, choice in rules:
        if out and out[-1][1] == choice:
            out[-1] = (bound, choice)
        else:
            out.append((bound, choice))
    out[-1] = (ANY, out[-1][1])
    return tuple(out)


def emit(best, space):
    """The rules of one collective: comm_size -> ppn -> msg_size -> label, best(point) the
    model's choice at a point."""
    def by_ppn(ranks):
        return level(space.ppn_values(ranks),
                     lambda ppn: level(space.size_values(),
                                       lambda size: best(Point(ranks, ppn, size))))
    return level(space.rank_values(), by_ppn)


def constant(choice):
    return ((ANY, ((ANY, ((ANY, choice),)),)),)


# -- roam's rules file --------------------------------------------------------------------------

def leaf(choice, ranks_bound):
    alg, k = parse_label(choice)
    if k is None:
        return {f"algorithm={alg}": {}}
    return {f"algorithm={alg}": {f"k={ranks_bound if k == 'P' else k}": {}}}


def to_roam(rules_by_collective, max_ranks):
    """roam's rules file (a dict in file order) from {collective: rules}; collectives
    missing get the binomial tree everywhere."""
    doc = {}
    for c in COLLECTIVES:
        rules = rules_by_collective.get(c, constant(FALLBACK))
        by_ranks = {}
        for rb, ppn_rules in rules:
            bound = max_ranks if rb is ANY else rb
            by_ppn = {}
            for pb, msg_rules in ppn_rules:
                by_ppn[key("ppn", pb)] = {key("msg_size", mb): leaf(choice, bound)
                                          for mb, choice in msg_rules}
            by_ranks[key("comm_size", rb)] = by_ppn
        doc[f"collective={c}"] = by_ranks
    return doc


def key(name, bound):
    return f"{name}=any" if bound is ANY else f"{name}<={bound}"


def dumps(doc):
    """The file's text: one collective per block, a leaf rule per line."""
    lines = ["{"]
    colls = list(doc.items())
    for ci, (ckey, by_ranks) in enumerate(colls):
        lines.append(f'  "{ckey}": {{')
        ranks = list(by_ranks.items())
        for ri, (rkey, by_ppn) in enumerate(ranks):
            lines.append(f'    "{rkey}": {{')
            ppns = list(by_ppn.items())
            for pi, (pkey, by_msg) in enumerate(ppns):
                lines.append(f'      "{pkey}": {{')
                msgs = list(by_msg.items())
                for mi, (mkey, lf) in enumerate(msgs):
                    comma = "," if mi + 1 < len(msgs) else ""
                    lines.append(f'        "{mkey}": {json.dumps(lf, separators=(", ", ": "))}'
                                 + comma)
                lines.append("      }" + ("," if pi + 1 < len(ppns) else ""))
            lines.append("    }" + ("," if ri + 1 < len(ranks) else ""))
        lines.append("  }" + ("," if ci + 1 < len(colls) else ""))
    lines.append("}")
    return "\n".join(lines) + "\n"


def _bound(k, name):
    if k == f"{name}=any":
        return ANY
    prefix = f"{name}<="
    if not k.startswith(prefix) or not k[len(prefix):].isdigit():
        raise ValueError(f'expected "{name}<=N" or "{name}=any", not "{k}"')
    return int(k[len(prefix):])


def _first(level_dict, name, value):
    for k, sub in level_dict.items():
        b = _bound(k, name)
        if b is ANY or value <= b:
            return sub
    raise ValueError(f"no {name} rule holds for {value}: the last must be {name}=any")


def select(doc, collective, ranks, ppn, nbytes):
    """(algorithm, k) a roam rules document picks, as tuning_rules::select does (k 0: none
    given)."""
    leafd = _first(_first(_first(doc[f"collective={collective}"], "comm_size", ranks), "ppn", ppn),
                   "msg_size", nbytes)
    (akey, opts), = leafd.items()
    alg = akey.split("=", 1)[1]
    k = int(next(iter(opts)).split("=", 1)[1]) if opts else 0
    return alg, k


def select_label(doc, collective, point):
    alg, k = select(doc, collective, point.ranks, point.ppn, point.bytes)
    return label(alg, k, point.ranks)


def check_shape(doc):
    """Raises ValueError unless the document has the rules file's shape: the five
    collectives, levels comm_size, ppn, msg_size with increasing bounds ending in =any, one
    algorithm per leaf with k >= its smallest radix (linear none). (roam's own reader,
    bench_coll --default-choices --rules FILE, is the authority: coll_tune.py check.)"""
    if set(doc) != {f"collective={c}" for c in COLLECTIVES}:
        raise ValueError(f"the collectives are {sorted(doc)}, not the five")
    for c, by_ranks in doc.items():
        _check_level(c, by_ranks, ["comm_size", "ppn", "msg_size"])


def _check_level(where, d, names):
    name = names[0]
    if not isinstance(d, dict) or not d:
        raise ValueError(f"{where}: no {name} rule")
    last = -1
    keys = list(d)
    for i, k in enumerate(keys):
        b = _bound(k, name)
        if b is ANY and i + 1 != len(keys):
            raise ValueError(f'{where}: "{k}" is not last')
        if b is not ANY:
            if b <= last:
                raise ValueError(f'{where}: "{k}" does not exceed the bound before it')
            last = b
        if len(names) > 1:
            _check_level(f"{where}/{k}", d[k], names[1:])
        else:
            leafd = d[k]
            if len(leafd) != 1:
                raise ValueError(f"{where}/{k}: a leaf holds one algorithm")
            (akey, opts), = leafd.items()
            alg = akey.split("=", 1)[1]
            ks = [int(o.split("=", 1)[1]) for o in opts]
            parse_label(alg if not ks else f"{alg}:{ks[0]}")
    if _bound(keys[-1], name) is not ANY:
        raise ValueError(f'{where}: the last rule must be "{name}=any"')


# -- MPICH's selection JSON ---------------------------------------------------------------------

# roam's choice -> MPICH's algorithm and its parameters (N: the comm_size rule's bound). Where
# MPICH lacks the algorithm, its nearest: docs/guide/collectives_tuning.md, "MPICH".
def mpich_algorithm(collective, alg, k, n):
    tree = lambda kk: ("tree", {"tree_type": "knomial_1", "k": kk})  # noqa: E731
    if collective == "bcast":
        if alg == "linear":
            return "MPIR_Bcast_intra_tree", {"tree_type": "knomial_1", "k": n}
        if alg == "knomial":
            if k == 2:
                return "MPIR_Bcast_intra_binomial", {}
            return "MPIR_Bcast_intra_" + tree(k)[0], tree(k)[1]
        if alg == "recursive_multiplying":
            return "MPIR_Bcast_intra_scatter_recursive_doubling_allgather", {}
        if alg == "k_ring":
            return "MPIR_Bcast_intra_scatter_ring_allgather", {}
    if collective == "reduce":
        return "MPIR_Reduce_intra_binomial", {}
    if collective == "gather":
        return "MPIR_Gather_intra_binomial", {}
    if collective == "allgather":
        if alg == "linear":
            return "MPIR_Allgather_intra_k_brucks", {"k": n}
        if alg == "knomial":
            return "MPIR_Allgather_intra_k_brucks", {"k": k}
        if alg == "recursive_multiplying":
            if k == 2:
                return "MPIR_Allgather_intra_recursive_doubling", {}
            return "MPIR_Allgather_intra_recexch_doubling", {"k": k}
        if alg == "k_ring":
            return "MPIR_Allgather_intra_ring", {}
    if collective == "allreduce":
        if alg == "linear":
            return "MPIR_Allreduce_intra_recursive_multiplying", {"k": n}
        if alg == "knomial":
            return "MPIR_Allreduce_intra_tree", {"tree_type": "knomial_1", "k": k}
        if alg == "recursive_multiplying":
            return "MPIR_Allreduce_intra_recursive_multiplying", {"k": k}
        if alg == "reduce_scatter_allgather":
            if k == 2:
                return "MPIR_Allreduce_intra_reduce_scatter_allgather", {}
            return "MPIR_Allreduce_intra_k_reduce_scatter_allgather", {"k": k}
        if alg == "k_ring":
            return "MPIR_Allreduce_intra_ring", {}
    raise ValueError(f"no MPICH algorithm for {collective} {alg}")


def to_mpich(doc, max_ranks, base=None):
    """MPICH's selection JSON from a roam rules document: per collective,
    comm_type=intra -> comm_size -> comm_avg_ppn -> avg_msg_size (allgather: total_msg_size,
    the bound times the comm_size bound) -> algorithm=MPIR_... with its k= and tree_type=
    keys. An allreduce's tuned rules apply to commutative operators (is_commutative=yes);
    others keep recursive doubling. With `base` (MPICH's own file, parsed), its
    "comm_type=intra" entries of the five collectives are replaced and the rest kept."""
    out = dict(base) if base else {}
    for c in COLLECTIVES:
        intra = {}
        for rkey, by_ppn in doc[f"collective={c}"].items():
            rb = _bound(rkey, "comm_size")
            n = max_ranks if rb is ANY else rb
            ppn_out = {}
            for pkey, by_msg in by_ppn.items():
                pb = _bound(pkey, "ppn")
                msg_out = {}
                for mkey, leafd in by_msg.items():
                    mb = _bound(mkey, "msg_size")
                    (akey, opts), = leafd.items()
                    alg = akey.split("=", 1)[1]
                    k = int(next(iter(opts)).split("=", 1)[1]) if opts else 2
                    name, params = mpich_algorithm(c, alg, k, n)
                    field_ = "total_msg_size" if c == "allgather" else "avg_msg_size"
                    mk = f"{field_}=any" if mb is ANY else \
                        f"{field_}<={mb * n if c == 'allgather' else mb}"
                    msg_out[mk] = {f"algorithm={name}": {f"{p}={v}": {} for p, v in params.items()}}
                ppn_out["comm_avg_ppn=any" if pb is ANY else f"comm_avg_ppn<={pb}"] = msg_out
            intra["comm_size=any" if rb is ANY else f"comm_size<={rb}"] = ppn_out
        if c == "allreduce":
            intra = {"is_commutative=yes": intra,
                     "is_commutative=no": {"algorithm=MPIR_Allreduce_intra_recursive_doubling": {}}}
        entry = dict(out.get(f"collective={c}", {}))
        entry["comm_type=intra"] = intra
        out[f"collective={c}"] = entry
    return out
