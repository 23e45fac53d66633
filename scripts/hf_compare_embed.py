#!/usr/bin/env python3
"""Forge's embeddings against references on random-weight models (runs where torch +
transformers are).

Cases:
  - bert: HF transformers' BertModel (exact GELU, learned positions, token type 0), mean and CLS
    pooling;
  - nomic-bert: the nomic-bert layer (rotary NeoX positions, one qkv matrix, SwiGLU, post-
    LayerNorms) written here in torch float64, as transformers has no such model built in;
  - qwen3: HF's Qwen3 decoder, its final norm's last-token state (Qwen3-Embedding's pooling)
    and the mean of its states.
Each model is written as an F32 GGUF (hf_compare.py's writer), Forge embeds several inputs of 1 to
200 tokens in one call (`forge embed --ids-file`), and each L2-normalized vector is compared with
the reference's: normalized error max|d| / max|ref| within DESIGN.md's whole-model bound (1e-4 in
F32, 1e-2 with F16 activations).

usage: hf_compare_embed.py FORGE_BINARY WORKDIR [--json OUT.json] [--dtypes f32,f16]
"""
import json
import os
import subprocess
import sys

import numpy as np
import torch
import transformers

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hf_compare import BOUNDS, convert, randomize, write_gguf  # noqa: E402

POOLING = {'mean': 1, 'cls': 2, 'last': 3}


def pool(hidden, kind):
    v = hidden.mean(0) if kind == 'mean' else hidden[0] if kind == 'cls' else hidden[-1]
    return v / np.linalg.norm(v)


def np64(t):
    return t.detach().to(torch.float64).cpu().numpy()


# ---------------------------------------------------------------- bert ---------------------
def bert_case(seed):
    cfg = transformers.BertConfig(vocab_size=300, hidden_size=128, num_hidden_layers=2,
                                  num_attention_heads=4, intermediate_size=256,
                                  max_position_embeddings=256, type_vocab_size=2,
                                  layer_norm_eps=1e-12, hidden_act='gelu')
    model = transformers.BertModel(cfg, add_pooling_layer=False)
    randomize(model, seed)
    g = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():  # LayerNorm weights about 1 (randomize matches 'norm' only)
        for n, p in model.named_parameters():
            if n.endswith('LayerNorm.weight'):
                p.copy_(1 + 0.1 * torch.randn(p.shape, generator=g, dtype=p.dtype))
    model = model.double().eval()

    def write(path, kind):
        sd = {k: v.detach().to(torch.float32).numpy() for k, v in model.state_dict().items()}
        md = {'general.architecture': 'bert', 'general.name': 'hf-random-bert',
              'bert.context_length': 256, 'bert.embedding_length': 128, 'bert.block_count': 2,
              'bert.feed_forward_length': 256, 'bert.attention.head_count': 4,
              'bert.attention.layer_norm_epsilon': 1e-12, 'bert.attention.causal': False,
              'bert.pooling_type': POOLING[kind]}
        e = 'embeddings.'
        t = [('token_embd.weight', sd[e + 'word_embeddings.weight']),
             ('position_embd.weight', sd[e + 'position_embeddings.weight']),
             ('token_types.weight', sd[e + 'token_type_embeddings.weight']),
             ('token_embd_norm.weight', sd[e + 'LayerNorm.weight']),
             ('token_embd_norm.bias', sd[e + 'LayerNorm.bias'])]
        for i in range(2):
            p, b = f'encoder.layer.{i}.', f'blk.{i}.'
            pairs = [('attention.self.query', 'attn_q'), ('attention.self.key', 'attn_k'),
                     ('attention.self.value', 'attn_v'), ('attention.output.dense', 'attn_output'),
                     ('attention.output.LayerNorm', 'attn_output_norm'),
                     ('intermediate.dense', 'ffn_up'), ('output.dense', 'ffn_down'),
                     ('output.LayerNorm', 'layer_output_norm')]
            for hf, gg in pairs:
                t += [(b + gg + '.weight', sd[p + hf + '.weight']),
                      (b + gg + '.bias', sd[p + hf + '.bias'])]
        write_gguf(path, md, t)

    def reference(ids):
        with torch.no_grad():
            return np64(model(torch.tensor([ids])).last_hidden_state[0])
    return write, reference


# ---------------------------------------------------------------- nomic-bert ---------------
def nomic_case(seed):
    D, H, F, L, V, theta = 128, 4, 192, 2, 300, 1000.0
    g = torch.Generator().manual_seed(seed)

    def rnd(*shape, scale=0.08, offset=0.0):
        return offset + scale * torch.randn(*shape, generator=g, dtype=torch.float64)
    w = {'token_embd.weight': rnd(V, D), 'token_types.weight': rnd(2, D),
         'token_embd_norm.weight': rnd(D, scale=0.1, offset=1), 'token_embd_norm.bias': rnd(D)}
    for i in range(L):
        b = f'blk.{i}.'
        w.update({b + 'attn_qkv.weight': rnd(3 * D, D), b + 'attn_output.weight': rnd(D, D),
                  b + 'attn_output_norm.weight': rnd(D, scale=0.1, offset=1),
                  b + 'attn_output_norm.bias': rnd(D), b + 'ffn_gate.weight': rnd(F, D),
                  b + 'ffn_up.weight': rnd(F, D), b + 'ffn_down.weight': rnd(D, F),
                  b + 'layer_output_norm.weight': rnd(D, scale=0.1, offset=1),
                  b + 'layer_output_norm.bias': rnd(D)})

    def write(path, kind):
        md = {'general.architecture': 'nomic-bert', 'general.name': 'random-nomic-bert',
              'nomic-bert.context_length': 2048, 'nomic-bert.embedding_length': D,
              'nomic-bert.block_count': L, 'nomic-bert.feed_forward_length': F,
              'nomic-bert.attention.head_count': H, 'nomic-bert.attention.layer_norm_epsilon': 1e-12,
              'nomic-bert.attention.causal': False, 'nomic-bert.rope.freq_base': theta,
              'nomic-bert.pooling_type': POOLING[kind]}
        write_gguf(path, md, [(k, v.numpy()) for k, v in w.items()])

    def ln(x, p):
        return torch.nn.functional.layer_norm(x, (D,), w[p + '.weight'], w[p + '.bias'], 1e-12)

    def rope(x, n):  # [T, H, d] NeoX: pairs (i, i + d/2)
        d = x.shape[-1]
        inv = theta ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
        ang = torch.arange(n, dtype=torch.float64)[:, None] * inv[None]
        cos, sin = torch.cos(ang)[:, None], torch.sin(ang)[:, None]
        a, b = x[..., :d // 2], x[..., d // 2:]
        return torch.cat([a * cos - b * sin, a * sin + b * cos], -1)

    def reference(ids):
        T, d = len(ids), D // H
        x = w['token_embd.weight'][ids] + w['token_types.weight'][0]
        x = ln(x, 'token_embd_norm')
        for i in range(L):
            b = f'blk.{i}.'
            q, k, v = (x @ w[b + 'attn_qkv.weight'].T).split(D, -1)
            q, k, v = rope(q.view(T, H, d), T), rope(k.view(T, H, d), T), v.view(T, H, d)
            s = torch.einsum('thd,jhd->htj', q, k) / d ** 0.5
            a = torch.einsum('htj,jhd->thd', s.softmax(-1), v).reshape(T, D)
            x = ln(x + a @ w[b + 'attn_output.weight'].T, b + 'attn_output_norm')
            gate, up = x @ w[b + 'ffn_gate.weight'].T, x @ w[b + 'ffn_up.weight'].T
            y = (torch.nn.functional.silu(gate) * up) @ w[b + 'ffn_down.weight'].T
            x = ln(x + y, b + 'layer_output_norm')
        return x.numpy()
    return write, reference


# ---------------------------------------------------------------- qwen3 --------------------
def qwen3_case(seed):
    cfg = transformers.Qwen3Config(vocab_size=300, hidden_size=128, intermediate_size=320,
                                   num_hidden_layers=2, num_attention_heads=4,
                                   num_key_value_heads=2, head_dim=32, rope_theta=1000000.0,
                                   rms_norm_eps=1e-6, max_position_embeddings=4096,
                                   tie_word_embeddings=True)
    model = transformers.AutoModelForCausalLM.from_config(cfg, attn_implementation='eager')
    randomize(model, seed)
    model = model.double().eval()

    def write(path, kind):
        convert(model, 'qwen3', path, {'qwen3.pooling_type': POOLING[kind]})

    def reference(ids):
        with torch.no_grad():
            return np64(model.model(torch.tensor([ids])).last_hidden_state[0])
    return write, reference


CASES = [('bert', 'mean', bert_case), ('bert', 'cls', bert_case),
         ('nomic-bert', 'mean', nomic_case), ('nomic-bert', 'cls', nomic_case),
         ('qwen3', 'last', qwen3_case), ('qwen3', 'mean', qwen3_case)]


def main():
    forge, work = sys.argv[1], sys.argv[2]
    out_json = sys.argv[sys.argv.index('--json') + 1] if '--json' in sys.argv else None
    dtypes = (sys.argv[sys.argv.index('--dtypes') + 1] if '--dtypes' in sys.argv else 'f32').split(',')
    os.makedirs(work, exist_ok=True)
    gen = torch.Generator().manual_seed(7)
    inputs = [torch.randint(0, 300, (n,), generator=gen).tolist() for n in (1, 5, 64, 130, 200)]
    ids_file = os.path.join(work, 'inputs.txt')
    with open(ids_file, 'w') as f:
        f.write(''.join(','.join(map(str, ids)) + '\n' for ids in inputs))
    results, ok = [], True
    for arch, kind, make in CASES:
        write, reference = make(1234)
        name = f'{arch}-{kind}'
        path = os.path.join(work, name + '.gguf')
        write(path, kind)
        want = [pool(reference(ids), kind) for ids in inputs]
        for dtype in dtypes:
            bound = BOUNDS[dtype]
            r = subprocess.run([forge, 'embed', '-m', path, '--ids-file', ids_file, '--dtype', dtype],
                               capture_output=True, text=True)
            if r.returncode != 0:
                print(f'{name}: forge failed: {r.stderr.strip()}')
                ok = False
                results.append(dict(case=name, dtype=dtype, error=r.stderr.strip()))
                continue
            got = [np.array(json.loads(line)) for line in r.stdout.splitlines() if line.strip()]
            errs = [float(np.abs(g - w_).max() / np.abs(w_).max()) if g.shape == w_.shape else
                    float('inf') for g, w_ in zip(got, want)]
            err = max(errs) if len(got) == len(want) else float('inf')
            passed = bool(err <= bound)
            ok &= passed
            results.append(dict(case=name, arch=arch, pooling=kind, dtype=dtype,
                                lengths=[len(i) for i in inputs], normalized_error=err,
                                per_input=errs, bound=bound, passed=passed))
            print(f'{name:18s} {dtype}  inputs of {[len(i) for i in inputs]} tokens: normalized '
                  f'error {err:.3e}  {"PASS" if passed else "FAIL"}')
    if out_json:
        with open(out_json, 'w') as f:
            json.dump(dict(transformers=transformers.__version__, torch=torch.__version__,
                           bounds=BOUNDS, results=results), f, indent=2)
    sys.exit(0 if ok else 1)


if __name__ == '__main__':
    main()
