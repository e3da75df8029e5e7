"""Alternative maps for randomised response: exact k-NN against brute force (both backends),
the paper's nearest-neighbour map against a literal Alg. 1, injective and paired maps
(fixed-point-free permutations, optimality on tiny inputs, fallback), validation."""

import itertools

import numpy as np
import pytest

from privrec.errors import ParameterError, PrivrecError
from privrec.privacy import alternatives as A

try:
    import faiss  # noqa: F401
    HAVE_FAISS = True
except ImportError:
    HAVE_FAISS = False
BACKENDS = ["numpy", pytest.param("faiss", marks=pytest.mark.skipif(not HAVE_FAISS, reason="faiss-cpu not installed"))]


def brute_knn(x, k):
    x = np.asarray(x, dtype=np.float64)
    n = len(x)
    d2 = ((x[:, None, :] - x[None, :, :]) ** 2).sum(-1)
    np.fill_diagonal(d2, np.inf)
    order = np.lexsort((np.broadcast_to(np.arange(n), (n, n)), d2), axis=1)[:, :k]
    return order, np.sqrt(np.take_along_axis(d2, order, axis=1))


def alg1_literal(x):
    """Alg. 1 lines 1-10 verbatim: strict '<', items visited in code order."""
    m = len(x)
    alt = [0] * (m + 1)
    for v1 in range(m):
        d_min = np.inf
        for v2 in range(m):
            if v2 == v1:
                continue
            d = np.linalg.norm(x[v1] - x[v2])
            if d < d_min:
                alt[v1 + 1], d_min = v2 + 1, d
    return np.array(alt)


def assert_derangement(alt):
    m = len(alt) - 1
    assert alt[0] == 0
    assert sorted(alt[1:].tolist()) == list(range(1, m + 1))
    assert (alt[1:] != np.arange(1, m + 1)).all()


# ------------------------------------------------------------------ k-NN
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("n,d,k", [(2, 3, 1), (7, 3, 6), (60, 5, 3), (300, 16, 10)])
def test_knn_matches_brute_force(backend, n, d, k):
    x = np.random.default_rng(n + d).normal(size=(n, d))
    idx, dist = A.knn(x, k, backend, block_size=7)
    bi, bd = brute_knn(x, k)
    np.testing.assert_array_equal(idx, bi)
    np.testing.assert_allclose(dist, bd, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("backend", BACKENDS)
def test_knn_ties_go_to_the_lowest_index_and_duplicates_are_exact(backend):
    grid = np.array([[0, 0], [1, 0], [-1, 0], [0, 1], [0, -1], [2, 0]], dtype=float)
    idx, dist = A.knn(grid, 3, backend)
    np.testing.assert_array_equal(idx, brute_knn(grid, 3)[0])
    assert idx[0].tolist() == [1, 2, 3]                          # four points at distance 1: lowest indices
    dup = np.repeat(np.random.default_rng(0).normal(size=(4, 3)), 40, axis=0)   # > 2k+8 copies of each point
    idx, dist = A.knn(dup, 5, backend)
    np.testing.assert_array_equal(idx, brute_knn(dup, 5)[0])
    assert (dist == 0).all()


@pytest.mark.skipif(not HAVE_FAISS, reason="faiss-cpu not installed")
def test_faiss_and_numpy_backends_agree_on_unit_vectors():
    x = np.random.default_rng(3).normal(size=(2000, 32)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    i1, d1 = A.knn(x, 10, "numpy")
    i2, d2 = A.knn(x, 10, "faiss")
    np.testing.assert_array_equal(i1, i2)
    np.testing.assert_array_equal(d1, d2)
    i3, _ = A.knn(x, 10, "numpy", block_size=97)
    np.testing.assert_array_equal(i1, i3)


# ------------------------------------------------------------------ maps
def test_nearest_neighbour_map_is_algorithm_1():
    x = np.random.default_rng(1).normal(size=(60, 4))
    nn = A.nearest_neighbour_map(x)
    np.testing.assert_array_equal(nn.alt, alg1_literal(x))
    ties = np.array([[0, 0], [0, 1], [1, 0], [5, 5], [5, 6]], dtype=float)   # item 1 is at distance 1 of 2 and 3
    nn = A.nearest_neighbour_map(ties, backend="numpy")
    np.testing.assert_array_equal(nn.alt, alg1_literal(ties))
    assert nn.alt.tolist() == [0, 2, 1, 1, 5, 4]
    s = nn.statistics()
    assert not s["injective"] and s["max_preimage"] == 2 and s["outside_image_fraction"] == pytest.approx(0.2)
    np.testing.assert_allclose(nn.distances, [1, 1, 1, 1, 1])


def _total(x, alt):
    return np.linalg.norm(x - x[alt[1:] - 1], axis=1).sum()


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_injective_map_is_a_min_weight_derangement(seed):
    m = 7
    x = np.random.default_rng(seed).normal(size=(m, 3))
    amap = A.injective_map(x, k=m - 1)                          # complete graph: the global optimum
    assert_derangement(amap.alt)
    best = min(_total(x, np.array((0,) + tuple(p + 1 for p in perm)))
               for perm in itertools.permutations(range(m)) if all(perm[i] != i for i in range(m)))
    assert _total(x, amap.alt) <= best * (1 + 1e-5)             # distances quantised to 2^-20 of the longest
    assert amap.statistics()["injective"] and amap.fallback is None
    np.testing.assert_allclose(amap.distances, np.linalg.norm(x - x[amap.alt[1:] - 1], axis=1), rtol=1e-5, atol=1e-6)


def test_injective_map_on_a_larger_set_stays_close():
    x = np.random.default_rng(4).normal(size=(1500, 16))
    amap = A.injective_map(x, k=5)                              # k = 5 triggered a LAPJVsp hang with float costs
    assert_derangement(amap.alt)
    s = amap.statistics()
    assert s["mean_knn_rank"] < 5 and s["nearest_fraction"] > 0.3
    assert s["mean_distance"] <= 1.2 * A.nearest_neighbour_map(x).statistics()["mean_distance"]


def test_injective_map_fallback_when_the_knn_graph_has_no_perfect_matching():
    star = np.array([[0, 0], [1, 0], [0, 1], [-1, 0], [0, -1]], dtype=float)   # leaves only see the centre
    amap = A.injective_map(star, k=1, max_k=1)
    assert_derangement(amap.alt)
    assert amap.fallback is not None and amap.info["fallback_edges"] > 0
    assert A.injective_map(star, k=1).fallback is None                          # k doubling suffices here


@pytest.mark.parametrize("m", [2, 3, 4, 5, 8, 9, 41])
def test_paired_map_is_an_involution(m):
    x = np.random.default_rng(m).normal(size=(m, 3))
    amap = A.paired_map(x, k=3)
    alt = amap.alt
    assert_derangement(alt)
    s = amap.statistics()
    if m % 2 == 0:
        assert A.is_involution(alt) and s["two_cycle_fraction"] == 1.0 and amap.info["three_cycle"] is None
    else:                                                       # one 3-cycle is unavoidable
        t = amap.info["three_cycle"]
        assert len(t) == 3 and alt[alt[alt[t[0]]]] == t[0]
        assert s["two_cycle_fraction"] == pytest.approx((m - 3) / m)


def test_paired_map_matches_the_optimal_pairing_on_tiny_inputs():
    x = np.random.default_rng(9).normal(size=(6, 2))
    amap = A.paired_map(x, k=5)

    def pairings(items):
        if not items:
            yield []
            return
        a = items[0]
        for i in range(1, len(items)):
            for rest in pairings(items[1:i] + items[i + 1:]):
                yield [(a, items[i])] + rest

    best = min(sum(np.linalg.norm(x[a] - x[b]) for a, b in p) for p in pairings(list(range(6))))
    assert _total(x, amap.alt) / 2 <= best * 1.25                # heuristic: near the optimum


def test_map_statistics_and_preimages():
    alt = np.array([0, 2, 1, 2, 2])
    assert A.preimage_counts(alt)[1:].tolist() == [1, 3, 0, 0]
    s = A.map_statistics(alt)
    assert s == {"n_items": 4, "injective": False, "fixed_points": 0, "outside_image_fraction": 0.5,
                 "max_preimage": 3, "two_cycle_fraction": 0.5}
    assert A.is_involution(np.array([0, 2, 1, 4, 3])) and not A.is_involution(np.array([0, 2, 3, 1]))


@pytest.mark.parametrize("alt,needle", [
    (np.array([0, 1, 3, 2]), "maps item 1 to itself"),
    (np.array([2, 1, 3, 2]), r"\[0\] must be 0"),
    (np.array([0, 2, 4, 1]), "not an item code in 1..3"),
    (np.array([0, 0, 1, 2]), "not an item code"),
    (np.array([0, 1]), "length m \\+ 1 >= 3"),
    (np.array([[0, 1], [2, 3]]), "1-D"),
    (np.array(["0", "2", "1"]), "integer item codes"),
])
def test_check_alternative_map_rejects_bad_maps(alt, needle):
    with pytest.raises(ParameterError, match=needle):
        A.check_alternative_map(alt)


def test_check_alternative_map_length_and_types():
    amap = A.injective_map(np.random.default_rng(0).normal(size=(5, 2)), k=2)
    out = A.check_alternative_map(amap, n_items=5)
    assert out.dtype == np.int64 and out is not amap.alt
    with pytest.raises(ParameterError, match="n_items \\+ 1 = 7"):
        A.check_alternative_map(amap, n_items=6)
    assert A.check_alternative_map(np.array([0.0, 2.0, 1.0])).tolist() == [0, 2, 1]


# ------------------------------------------------------------------ embeddings
class FakeEncoder:
    def __init__(self, out=None):
        self.out = out
        self.calls = []

    def encode(self, texts, **kwargs):
        self.calls.append((list(texts), kwargs))
        if self.out is not None:
            return self.out
        return np.array([[len(t), t.count("o")] for t in texts], dtype=np.float64)


def test_embed_texts_uses_a_supplied_encoder():
    enc = FakeEncoder()
    emb = A.embed_texts(["Toy Story (1995)", "Heat (1995)"], model=enc, batch_size=8)
    assert emb.dtype == np.float32 and emb.shape == (2, 2)
    assert enc.calls[0][1]["batch_size"] == 8 and enc.calls[0][1]["normalize_embeddings"] is False
    assert A.item_texts(["Heat", "Up"], [1995.0, float("nan")]) == ["Heat (1995)", "Up"]


@pytest.mark.parametrize("call,err,needle", [
    (lambda: A.embed_texts("Heat", model=FakeEncoder()), ParameterError, "not one string"),
    (lambda: A.embed_texts([], model=FakeEncoder()), ParameterError, "empty"),
    (lambda: A.embed_texts(["a", None], model=FakeEncoder()), ParameterError, r"texts\[1\]"),
    (lambda: A.embed_texts(["a", "b"], model=FakeEncoder(np.array([[0.0, np.nan], [1, 2]]))), PrivrecError, "NaN"),
    (lambda: A.embed_texts(["a", "b"], model=FakeEncoder(np.zeros((3, 2)))), PrivrecError, "shape"),
    (lambda: A.embed_texts(["a"], model=3), ParameterError, "model must be"),
    (lambda: A.load_encoder("/nonexistent/model/dir"), ParameterError, "could not be loaded offline"),
    (lambda: A.item_texts(["a"], [1, 2]), ParameterError, "differ in length"),
])
def test_embedding_input_is_validated(call, err, needle):
    with pytest.raises(err, match=needle):
        call()


@pytest.mark.parametrize("call,needle", [
    (lambda: A.knn(np.array([[0.0, np.nan], [1, 1]]), 1), "NaN"),
    (lambda: A.nearest_neighbour_map(np.array([[0.0, np.inf], [1, 1], [2, 2]])), "NaN or infinity"),
    (lambda: A.injective_map(np.array([[np.nan, 0.0], [1, 1], [2, 2]])), "NaN"),
    (lambda: A.knn(np.zeros(5), 1), "2-D"),
    (lambda: A.knn(np.zeros((1, 3)), 1), "at least 2 items"),
    (lambda: A.knn(np.zeros((3, 0)), 1), "no columns"),
    (lambda: A.knn(np.zeros((4, 2)), 4), "k=4"),
    (lambda: A.knn(np.zeros((4, 2)), 0), "k must be a positive"),
    (lambda: A.knn(np.zeros((4, 2)), 1, "annoy"), "backend"),
    (lambda: A.knn(np.zeros((4, 2)), 1, block_size=0), "block_size"),
    (lambda: A.knn(np.array([["a", "b"], ["c", "d"]]), 1), "numeric"),
    (lambda: A.injective_map(np.zeros((4, 2)), k=0), "k must be a positive"),
])
def test_bad_embeddings_are_rejected(call, needle):
    with pytest.raises(ParameterError, match=needle):
        call()


@pytest.mark.slow
def test_minilm_titles_have_sensible_neighbours():
    titles = ["Toy Story (1995)", "Toy Story 2 (1999)", "Heat (1995)", "Godfather, The (1972)",
              "Godfather: Part II, The (1974)", "Babe (1995)"]
    emb = A.embed_texts(titles)                                  # offline all-MiniLM-L6-v2, ~15 s to load
    assert emb.shape == (6, 384)
    np.testing.assert_allclose(np.linalg.norm(emb, axis=1), 1.0, atol=1e-5)
    nn = A.nearest_neighbour_map(emb)
    assert nn.alt[1] == 2 and nn.alt[4] == 5
