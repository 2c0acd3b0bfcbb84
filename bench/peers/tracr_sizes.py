"""The sizes of tracr's compiled transformers for the library programs that
tests/python/test_rasp_compile.py compiles with lrnn (same vocabularies and max_len), for
the size table of docs/rasp.md.

tracr is not on PyPI: run with a checkout of github.com/google-deepmind/tracr on PYTHONPATH
and its requirements (jax, dm-haiku, networkx, chex, einops) installed, e.g.

    PYTHONPATH=/path/to/tracr python3 bench/peers/tracr_sizes.py

Prints one JSON object per program: layers (attention+MLP blocks), heads per layer, residual
width, MLP width (the widest layer's hidden units), or the error tracr raised.
"""
import json
import sys

try:
    from tracr.compiler import compiling, lib
    from tracr.rasp import rasp
except ImportError as e:  # pragma: no cover - a peer, not a dependency
    sys.exit(f"tracr is not importable ({e}); put a tracr checkout on PYTHONPATH")


def programs():
    tokens, indices = rasp.tokens, rasp.indices
    yield "length", lambda: lib.make_length(), {"a", "b", "c"}, 5
    yield "reverse", lambda: lib.make_reverse(tokens), {"a", "b", "c"}, 5
    yield "hist", lambda: lib.make_hist(), {"a", "b", "c"}, 5
    yield "sort_unique", lambda: lib.make_sort_unique(tokens, tokens), {"a", "b", "c", "d", "e"}, 3
    yield "sort", lambda: lib.make_sort(tokens, tokens, max_seq_len=5, min_key=1), {1, 2, 3}, 5
    yield "sort_freq", lambda: lib.make_sort_freq(max_seq_len=5), {"a", "b", "c"}, 5
    yield "frac_prevs", lambda: lib.make_frac_prevs(rasp.numerical(rasp.Map(lambda x: x == "x", tokens))), {"x", "y", "z"}, 5
    yield "pair_balance", lambda: lib.make_pair_balance(tokens, "(", ")"), {"(", ")", "a"}, 5
    yield "shuffle_dyck", lambda: lib.make_shuffle_dyck(["()"]), {"(", ")", "a"}, 5
    yield "shuffle_dyck2", lambda: lib.make_shuffle_dyck2(), {"(", ")", "{", "}"}, 4
    yield "shift_by", lambda: lib.shift_by(2, tokens), {"a", "b", "c"}, 5
    yield "detect_pattern", lambda: lib.detect_pattern(tokens, "ab"), {"a", "b", "c"}, 5
    yield "count_less_freq", lambda: lib.make_count_less_freq(2), {"a", "b", "c"}, 5
    yield "count", lambda: lib.make_count(tokens, "a"), {"a", "b", "c"}, 5
    yield "nary_sequencemap", lambda: lib.make_nary_sequencemap(lambda x, y, z: f"{x}{y}{z}", tokens, tokens, indices), {"a", "b"}, 5


def sizes(model):
    cfg = model.model_config
    blocks = model.params
    heads, mlps = [], []
    # One entry per layer: attention heads (0 for an empty attention block) and MLP width.
    for layer in range(cfg.num_layers):
        attn = blocks.get(f"transformer/layer_{layer}/attn/query")
        mlp = blocks.get(f"transformer/layer_{layer}/mlp/linear_1")
        heads.append(0 if attn is None or not attn["w"].any() else cfg.num_heads)
        mlps.append(0 if mlp is None or not mlp["w"].any() else int(mlp["w"].shape[1]))
    return {
        "layers": cfg.num_layers,
        "num_heads": cfg.num_heads,
        "residual_width": len(model.residual_labels),
        "mlp_width": max(mlps) if mlps else 0,
        "mlp_hidden_size": cfg.mlp_hidden_size,
    }


def main():
    for name, make, vocab, max_len in programs():
        try:
            model = compiling.compile_rasp_to_model(make(), vocab=vocab, max_seq_len=max_len, compiler_bos="BOS")
            row = {"program": name, **sizes(model)}
        except Exception as e:  # tracr refuses some programs: report what it said
            row = {"program": name, "error": f"{type(e).__name__}: {str(e)[:200]}"}
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
