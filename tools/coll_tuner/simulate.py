"""A simulated machine for the tuner: a LogGP-style model of roam's algorithms, round by round.

The machine has nodes of `ppn` processes; ranks r and r' share a node when r // ppn ==
r' // ppn (ranks fill nodes in order, as mpiexec's default placement does). Two links, each
with LogGP's parameters: the intra-node one (shared memory) and the inter-node one (the
network):
  L  latency of a message (µs)
  o  CPU overhead of posting a send or a receive (µs)
  g  gap: the least time between two messages a sender (or, inter-node, a port) injects (µs)
  G  time per byte (µs/byte): of one copy through shared memory, or of one network port
A node has `ports` network ports (NICs); its processes share them.

An algorithm is its schedule: rounds in which each rank posts sends and receives and waits
for them (roam's links: post, then complete), the next round starting when the slowest rank
is done. A round costs its slowest rank's
  T_r = sum over its messages of the posting cost (max(o, g) a send, o a receive)
      + the latency of its farthest message (L_inter if any crosses nodes, else L_intra)
      + max( its intra-node bytes x G_intra             copies, one after another,
             its inter-node bytes x G_inter / min(ports, its inter-node messages),
             its node's inter-node messages' sum of (g_inter + bytes x G_inter) / ports,
                                                          the node's ports, shared,
             its node's intra-node bytes x G_memory )    the node's memory bandwidth
      + bytes it combines x gamma
and the collective costs the sum of its rounds. A larger radix overlaps more latency but
posts more messages and shares ports; at high ppn the node's ports are the bottleneck; a
k-ring whose groups are the nodes keeps g(k-1) of its P-1 rounds inside nodes. Times are
multiplied by a small deterministic noise, exp(noise x N(0,1)), seeded by the point and the
choice, so that a tuner cannot learn the model exactly.

The schedules (as src/coll/*.cpp run them; root 0):
  linear     bcast/gather/reduce: the root sends to (receives from) all P-1 at once;
             allgather/allreduce: every rank exchanges with every other (one round)
  knomial    bcast: levels d = k^i from the top, parents send to r + j d (j < k);
             reduce/gather: the levels bottom-up, children send (gather: their subtree's
             blocks); allgather = gather + bcast of P blocks; allreduce = reduce + bcast
  recursive_multiplying   P cut into q = k^m ranges (q the largest power of k <= P), a
             range's members hand their data to its first rank (one round), the q first
             ranks exchange with the k-1 others of their group at distances 1, k, ... < q,
             then hand the result back; bcast = k-nomial scatter + this allgather
  reduce_scatter_allgather   the same groups; round s sends k-1 parts of a segment of
             n / k^s and combines what arrives, then the rounds backwards
  k_ring     g = ceil(P/k) groups of consecutive ranks: g(k-1) rounds of a ring inside the
             groups and g-1 rounds from each group to the next (rank + k), one block each;
             allreduce = the reduce-scatter (the same rounds, combining) + the allgather;
             bcast = binomial scatter + this allgather
For jobs above 1024 ranks the slowest rank is sought on 16 nodes (the first four, two in the
middle, the last two and eight chosen at random, seeded), all of whose ranks are modelled
exactly; the radix P of recursive multiplying and reduce-scatter-allgather and linear
allgather/allreduce (every rank exchanging with every other) are computed in closed form.
What it leaves out: contention inside the network (a full-bandwidth fabric), rounds that
overlap (a rank starts a round when every rank has finished the last), eager/rendezvous
protocols, caches, and empty transfers (roam skips them; the model charges their o and L).
"""

import math
import zlib
from dataclasses import dataclass, field

import numpy as np

from .space import ALGORITHMS, parse_label, radix_of


@dataclass(frozen=True)
class Link:
    latency_us: float
    overhead_us: float
    gap_us: float
    us_per_byte: float


@dataclass
class Machine:
    """A simulated machine. The defaults are in the range of a current cluster: 4 network
    ports of 25 GB/s (200 Gb/s) per node with 1.8 µs latency, shared memory at 1 µs latency
    (through the MPI library) and 10 GB/s per copy, 120 GB/s of memory per node, and
    combining at 4 GB/s."""

    intra: Link = Link(latency_us=1.0, overhead_us=0.3, gap_us=0.1, us_per_byte=1e-4)
    inter: Link = Link(latency_us=1.8, overhead_us=0.6, gap_us=0.3, us_per_byte=4e-5)
    ports: int = 4
    memory_us_per_byte: float = 1.0 / 120e3
    gamma_us_per_byte: float = 2.5e-4
    noise: float = 0.03
    seed: int = 1
    algorithms: tuple = ALGORITHMS
    cache: dict = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_args(cls, args):
        m = cls()
        for name in ("noise", "seed", "ports"):
            if getattr(args, f"sim_{name}", None) is not None:
                setattr(m, name, getattr(args, f"sim_{name}"))
        return m

    def hockney(self):
        """α, β, γ and o of the inter-node link, as roam's cost model takes them (µs,
        µs/byte, µs/byte, µs): a message's latency with both sides' overhead, one port's
        bytes, and the posting cost of each further message (max(o, g), as rounds charge)."""
        return (self.inter.latency_us + 2 * self.inter.overhead_us, self.inter.us_per_byte,
                self.gamma_us_per_byte, max(self.inter.overhead_us, self.inter.gap_us))

    def time_us(self, collective, choice, point):
        """The modelled time of `collective` by `choice` (a label) at `point`, noise
        included."""
        key = (collective, choice, point)
        if key not in self.cache:
            exact = self.exact_us(collective, choice, point)
            z = np.random.default_rng(zlib.crc32(
                f"{self.seed}:{collective}:{choice}:{point.ranks}:{point.ppn}:{point.bytes}"
                .encode())).standard_normal()
            self.cache[key] = exact * math.exp(self.noise * z)
        return self.cache[key]

    def exact_us(self, collective, choice, point):
        alg, _ = parse_label(choice)
        k = radix_of(choice, point.ranks)
        job = _Job(self, point.ranks, point.ppn)
        return job.collective(collective, alg, k, float(point.bytes))


class _Job:
    """One job's ranks on the machine, and the cost of rounds over its observed ranks."""

    EXACT_UP_TO = 1024  # ranks modelled all; beyond, the ranks of 16 sampled nodes

    def __init__(self, machine, p, ppn):
        self.m, self.p = machine, int(p)
        self.ppn = max(1, min(int(ppn), self.p))
        nodes = -(-self.p // self.ppn)
        if self.p <= self.EXACT_UP_TO:
            chosen = np.arange(nodes)
        else:
            rng = np.random.default_rng(zlib.crc32(f"{machine.seed}:{p}:{ppn}".encode()))
            fixed = {0, 1, 2, 3, nodes // 2, nodes // 2 + 1, nodes - 2, nodes - 1}
            rest = np.setdiff1d(np.arange(nodes), np.array(sorted(fixed)))
            extra = rng.choice(rest, size=min(8, rest.size), replace=False)
            chosen = np.array(sorted(fixed | set(int(x) for x in extra)))
        self.nodes = chosen
        self.obs = np.concatenate([np.arange(n * self.ppn, min((n + 1) * self.ppn, self.p))
                                   for n in chosen]).astype(np.int64)
        self.slot = np.searchsorted(chosen, self.obs // self.ppn)

    # -- the cost of one round -------------------------------------------------------------

    def round(self, out_src, out_peer, out_bytes, in_dst, in_peer, in_bytes, combine=None):
        """The time of a round in which observed rank obs[out_src[i]] sends out_bytes[i] to
        out_peer[i] and obs[in_dst[j]] receives in_bytes[j] from in_peer[j]; combine[r]:
        bytes observed rank r combines."""
        m, n_obs = self.m, self.obs.size
        node = self.obs // self.ppn
        o_intra = (out_peer // self.ppn) == node[out_src]
        i_intra = (in_peer // self.ppn) == node[in_dst]

        def per_rank(idx, weights):
            return np.bincount(idx, weights=weights, minlength=n_obs)

        post = (per_rank(out_src, np.where(o_intra, max(m.intra.overhead_us, m.intra.gap_us),
                                           max(m.inter.overhead_us, m.inter.gap_us)))
                + per_rank(in_dst, np.where(i_intra, m.intra.overhead_us, m.inter.overhead_us)))
        n_inter = per_rank(out_src, ~o_intra * 1.0) + per_rank(in_dst, ~i_intra * 1.0)
        n_any = per_rank(out_src, np.ones(out_src.size)) + per_rank(in_dst, np.ones(in_dst.size))
        latency = np.where(n_inter > 0, m.inter.latency_us,
                           np.where(n_any > 0, m.intra.latency_us, 0.0))
        copies = (per_rank(out_src, out_bytes * o_intra) + per_rank(in_dst, in_bytes * i_intra)) \
            * m.intra.us_per_byte
        out_inter_n = per_rank(out_src, ~o_intra * 1.0)
        in_inter_n = per_rank(in_dst, ~i_intra * 1.0)
        inject = np.maximum(
            per_rank(out_src, out_bytes * ~o_intra) / np.maximum(1, np.minimum(m.ports, out_inter_n)),
            per_rank(in_dst, in_bytes * ~i_intra) / np.maximum(1, np.minimum(m.ports, in_inter_n))
        ) * m.inter.us_per_byte
        n_nodes = self.nodes.size
        port_use_out = np.bincount(self.slot[out_src], weights=(m.inter.gap_us + out_bytes
                                   * m.inter.us_per_byte) * ~o_intra, minlength=n_nodes)
        port_use_in = np.bincount(self.slot[in_dst], weights=(m.inter.gap_us + in_bytes
                                  * m.inter.us_per_byte) * ~i_intra, minlength=n_nodes)
        ports = np.maximum(port_use_out, port_use_in)[self.slot] / m.ports
        memory = np.bincount(self.slot[in_dst], weights=in_bytes * i_intra,
                             minlength=n_nodes)[self.slot] * m.memory_us_per_byte
        t = post + latency + np.maximum(np.maximum(copies, inject), np.maximum(ports, memory))
        if combine is not None:
            t = t + combine * m.gamma_us_per_byte
        return float(t.max()) if t.size else 0.0

    def exchange_all(self, each, combine=0.0):
        """Every rank sends `each` bytes to every other and receives as much (closed form;
        every node full)."""
        m, p, ppn = self.m, self.p, self.ppn
        a, b = ppn - 1, p - ppn  # intra-node and inter-node peers of a rank
        post = a * (max(m.intra.overhead_us, m.intra.gap_us) + m.intra.overhead_us) \
            + b * (max(m.inter.overhead_us, m.inter.gap_us) + m.inter.overhead_us)
        latency = m.inter.latency_us if b else m.intra.latency_us
        copies = 2 * a * each * m.intra.us_per_byte
        inject = b * each * m.inter.us_per_byte / max(1, min(m.ports, b))
        ports = ppn * b * (m.inter.gap_us + each * m.inter.us_per_byte) / m.ports
        memory = ppn * a * each * m.memory_us_per_byte
        return post + latency + max(copies, inject, ports, memory) \
            + combine * m.gamma_us_per_byte

    @staticmethod
    def _pairs(idx, peers, nbytes):
        """Flattened (index, peer, bytes) of a matrix of peers (-1: none)."""
        keep = peers >= 0
        rows = np.broadcast_to(idx[:, None], peers.shape)[keep]
        b = np.broadcast_to(nbytes, peers.shape)[keep] if np.ndim(nbytes) else \
            np.full(int(keep.sum()), float(nbytes))
        return rows, peers[keep], b.astype(float)

    # -- linear -----------------------------------------------------------------------------

    def linear_rooted(self, n, reduce, towards_root):
        """The root sends n to all (or receives n from all, combining if reduce)."""
        p, obs = self.p, self.obs
        idx = np.arange(obs.size)
        root_idx = idx[obs == 0]
        others = np.arange(1, p)
        leaf_idx = idx[obs != 0]
        root_side = (np.repeat(root_idx, others.size), np.tile(others, root_idx.size),
                     np.full(root_idx.size * others.size, n))
        leaf_side = (leaf_idx, np.zeros(leaf_idx.size, dtype=np.int64), np.full(leaf_idx.size, n))
        combine = None
        if reduce:
            combine = np.where(obs == 0, (p - 1) * n, 0.0)
        if towards_root:
            return self.round(*leaf_side, *root_side, combine)
        return self.round(*root_side, *leaf_side, combine)

    # -- k-nomial ------------------------------------------------------------------------------

    def levels(self, k):
        d, out = 1, []
        while d < self.p:
            out.append(d)
            d *= k
        return out

    def knomial_down(self, k, child_bytes):
        """Top-down levels (bcast, scatter): child_bytes(child, d) is what a child at distance
        d gets."""
        obs, p = self.obs, self.p
        idx = np.arange(obs.size)
        total = 0.0
        j = np.arange(1, k)
        for d in reversed(self.levels(k)):
            senders = obs % (d * k) == 0
            kids = obs[senders][:, None] + d * j[None, :]
            kids = np.where(kids < p, kids, -1)
            out = self._pairs(idx[senders], kids, child_bytes(np.maximum(kids, 0), d))
            receivers = (obs % d == 0) & (obs % (d * k) != 0)
            r = obs[receivers]
            inc = (idx[receivers], r - r % (d * k), child_bytes(r, d).astype(float))
            total += self.round(*out, *inc)
        return total

    def knomial_up(self, k, child_bytes, combine_bytes):
        """Bottom-up levels (reduce, gather): children send child_bytes(child, d); a parent
        combines combine_bytes per child received (0: gather)."""
        obs, p = self.obs, self.p
        idx = np.arange(obs.size)
        total = 0.0
        j = np.arange(1, k)
        for d in self.levels(k):
            senders = (obs % d == 0) & (obs % (d * k) != 0)
            r = obs[senders]
            out = (idx[senders], r - r % (d * k), child_bytes(r, d).astype(float))
            parents = obs % (d * k) == 0
            kids = obs[parents][:, None] + d * j[None, :]
            kids = np.where(kids < p, kids, -1)
            inc = self._pairs(idx[parents], kids, child_bytes(np.maximum(kids, 0), d))
            combine = None
            if combine_bytes:
                combine = np.zeros(obs.size)
                combine[parents] = (kids >= 0).sum(axis=1) * combine_bytes
            total += self.round(*out, *inc, combine)
        return total

    def subtree(self, child, d):
        return np.minimum(d, self.p - child)

    # -- recursive multiplying and reduce-scatter-allgather ------------------------------------

    def participants(self, k):
        q = 1
        while q * k <= self.p:
            q *= k
        return q

    def first(self, i, q):
        return i * self.p // q

    def fold(self, q, to_leader_bytes, combine):
        """Members hand their data to their range's first rank (one round; none when q = P)."""
        if q == self.p:
            return 0.0
        obs, p = self.obs, self.p
        idx = np.arange(obs.size)
        rng = ((obs + 1) * q - 1) // p
        leader = self.first(rng, q)
        end = self.first(rng + 1, q)
        members = obs != leader
        out = (idx[members], leader[members], to_leader_bytes(obs[members]))
        lead = ~members
        width = int((end - leader).max()) if obs.size else 1
        kids = leader[lead][:, None] + np.arange(1, max(width, 1))[None, :]
        kids = np.where(kids < end[lead][:, None], kids, -1)
        inc = self._pairs(idx[lead], kids, to_leader_bytes(np.maximum(kids, 0)))
        comb = None
        if combine:
            comb = np.zeros(obs.size)
            comb[lead] = (kids >= 0).sum(axis=1) * combine
        return self.round(*out, *inc, comb)

    def unfold(self, q, nbytes):
        """The first ranks hand the result (nbytes) back to their ranges' members."""
        if q == self.p:
            return 0.0
        obs, p = self.obs, self.p
        idx = np.arange(obs.size)
        rng = ((obs + 1) * q - 1) // p
        leader = self.first(rng, q)
        end = self.first(rng + 1, q)
        members = obs != leader
        inc = (idx[members], leader[members], np.full(int(members.sum()), float(nbytes)))
        lead = ~members
        width = int((end - leader).max()) if obs.size else 1
        kids = leader[lead][:, None] + np.arange(1, max(width, 1))[None, :]
        kids = np.where(kids < end[lead][:, None], kids, -1)
        out = self._pairs(idx[lead], kids, float(nbytes))
        return self.round(*out, *inc)

    def group_rounds(self, k, q, send_bytes, recv_bytes, combine_bytes, backwards=False):
        """Rounds at distances d = 1, k, ... < q among the q first ranks: each exchanges with
        the k-1 others of its group; send_bytes(i, d) to each, recv_bytes(peer, d) from each
        (participant indices), combining combine_bytes(d) per peer."""
        obs, p = self.obs, self.p
        idx = np.arange(obs.size)
        rng = ((obs + 1) * q - 1) // p
        lead = obs == self.first(rng, q)
        i = rng[lead]
        total = 0.0
        distances = []
        d = 1
        while d < q:
            distances.append(d)
            d *= k
        for d in (reversed(distances) if backwards else distances):
            start = i // (d * k) * (d * k) + i % d
            peers = start[:, None] + d * np.arange(k)[None, :]
            peers = np.where(peers == i[:, None], -1, peers)
            ranks = np.where(peers >= 0, self.first(np.maximum(peers, 0), q), -1)
            out = self._pairs(idx[lead], ranks, send_bytes(np.broadcast_to(i[:, None], peers.shape), d))
            inc = self._pairs(idx[lead], ranks, recv_bytes(np.maximum(peers, 0), d))
            comb = None
            if combine_bytes:
                comb = np.zeros(obs.size)
                comb[lead] = (k - 1) * combine_bytes(d)
            total += self.round(*out, *inc, comb)
        return total

    def rm_allgather(self, k, block):
        """Recursive multiplying allgather of `block` bytes per rank."""
        p = self.p
        if k >= p:
            return self.exchange_all(block)
        q = self.participants(k)

        def run(i, d):  # bytes of the ranges [i//d*d, i//d*d + d)
            a = i // d * d
            return (self.first(a + d, q) - self.first(a, q)) * block

        return (self.fold(q, lambda r: np.full(np.shape(r), float(block)), 0)
                + self.group_rounds(k, q, run, run, None)
                + self.unfold(q, p * block))

    def rm_allreduce(self, k, n):
        if k >= self.p:
            return self.exchange_all(n, (self.p - 1) * n)
        q = self.participants(k)
        const = lambda i, d: np.full(np.shape(i), float(n))  # noqa: E731
        return (self.fold(q, lambda r: np.full(np.shape(r), float(n)), n)
                + self.group_rounds(k, q, const, const, lambda d: n)
                + self.unfold(q, n))

    def rsa_allreduce(self, k, n):
        p = self.p
        if k >= p:
            part = n / p
            return self.exchange_all(part, (p - 1) * part) + self.exchange_all(part)
        q = self.participants(k)

        def part(d):  # the part size at distance d: the segment n / d split k ways
            return n / d / k

        sized = lambda i, d: np.full(np.shape(i), part(d))  # noqa: E731
        return (self.fold(q, lambda r: np.full(np.shape(r), float(n)), n)
                + self.group_rounds(k, q, sized, sized, part)
                + self.group_rounds(k, q, sized, sized, None, backwards=True)
                + self.unfold(q, n))

    # -- k-ring -----------------------------------------------------------------------------

    def ring(self, k, block, combine):
        """The k-ring's rounds with `block` bytes per transfer (combining them if combine)."""
        obs, p = self.obs, self.p
        idx = np.arange(obs.size)
        g = -(-p // k)
        grp = ((obs + 1) * g - 1) // p
        first = grp * p // g
        size = (grp + 1) * p // g - first
        m = obs - first
        comb = np.full(obs.size, float(block)) if combine else None
        each = np.full(obs.size, float(block))
        total = 0.0
        biggest = -(-p // g)
        if biggest > 1:
            inner = size > 1
            right = first + (m + 1) % size
            left = first + (m - 1 + size) % size
            t = self.round(idx[inner], right[inner], each[inner], idx[inner], left[inner],
                           each[inner], None if comb is None else np.where(inner, comb, 0))
            total += g * (biggest - 1) * t
        if g > 1:
            nxt = (grp + 1) % g
            prv = (grp - 1) % g
            nfirst, pfirst = nxt * p // g, prv * p // g
            nsize = (nxt + 1) * p // g - nfirst
            psize = (prv + 1) * p // g - pfirst
            t = self.round(idx, nfirst + m % nsize, each, idx, pfirst + m % psize, each, comb)
            total += (g - 1) * t
        return total

    # -- the collectives --------------------------------------------------------------------

    def collective(self, what, alg, k, n):
        p = self.p
        if p <= 1:
            return 0.0
        kk = max(k, 2)
        if alg == "linear":
            if what in ("bcast", "gather", "reduce"):
                return self.linear_rooted(n, what == "reduce", what != "bcast")
            if what == "allgather":
                return self.exchange_all(n)
            return self.exchange_all(n, (p - 1) * n)
        if alg == "knomial":
            whole = lambda c, d: np.full(np.shape(c), n)  # noqa: E731
            if what == "bcast":
                return self.knomial_down(kk, whole)
            if what == "reduce":
                return self.knomial_up(kk, whole, n)
            blocks = lambda c, d: self.subtree(c, d) * n  # noqa: E731
            if what == "gather":
                return self.knomial_up(kk, blocks, 0)
            if what == "allgather":
                all_blocks = lambda c, d: np.full(np.shape(c), p * n)  # noqa: E731
                return self.knomial_up(kk, blocks, 0) + self.knomial_down(kk, all_blocks)
            return self.knomial_up(kk, whole, n) + self.knomial_down(kk, whole)
        if alg == "recursive_multiplying":
            if what == "allgather":
                return self.rm_allgather(kk, n)
            if what == "allreduce":
                return self.rm_allreduce(kk, n)
            if what == "bcast":
                chunks = lambda c, d: self.subtree(c, d) * n / p  # noqa: E731
                return self.knomial_down(kk, chunks) + self.rm_allgather(kk, n / p)
        if alg == "reduce_scatter_allgather" and what == "allreduce":
            return self.rsa_allreduce(kk, n)
        if alg == "k_ring":
            kr = max(1, min(k, p))
            if what == "allgather":
                return self.ring(kr, n, False)
            if what == "allreduce":
                return self.ring(kr, n / p, True) + self.ring(kr, n / p, False)
            if what == "bcast":
                chunks = lambda c, d: self.subtree(c, d) * n / p  # noqa: E731
                return self.knomial_down(2, chunks) + self.ring(kr, n / p, False)
        raise ValueError(f"the {alg} algorithm has no {what}")
