#!/usr/bin/env python3
"""Forge against HF transformers on random-weight models (runs where torch + transformers are).

For each case it builds a small random-weight HF model, converts it to an F32 GGUF with Forge's
own minimal writer below (llama's Q/K rows permuted to GGUF's adjacent-pair rope order, as the
usual HF-to-GGUF conversion does), runs `forge logits` on a 64-token prompt and compares every
position's logits with HF's float64 logits: normalized error max|d| / max|ref| must be <= 1e-4
(DESIGN.md, whole-model logits in F32).

usage: hf_compare.py FORGE_BINARY WORKDIR [--json OUT.json] [--dtypes f32,f16]
(--dtypes: the activation dtypes to run, each against its bound; default f32)
"""
import json
import os
import struct
import subprocess
import sys

import numpy as np
import torch
import transformers

# ---------------------------------------------------------------- GGUF writer (F32 only) ------
GGUF_U32, GGUF_I32, GGUF_F32, GGUF_BOOL, GGUF_STRING, GGUF_ARRAY = 4, 5, 6, 7, 8, 9


def _str(s):
    b = s.encode('utf-8')
    return struct.pack('<Q', len(b)) + b


def _value(v):
    if isinstance(v, list):  # arrays of booleans (a per-layer flag)
        assert all(isinstance(x, bool) for x in v)
        return (struct.pack('<I', GGUF_ARRAY) + struct.pack('<IQ', GGUF_BOOL, len(v)) +
                b''.join(struct.pack('<B', int(x)) for x in v))
    if isinstance(v, bool):
        return struct.pack('<I', GGUF_BOOL) + struct.pack('<B', int(v))
    if isinstance(v, int):
        return struct.pack('<I', GGUF_U32) + struct.pack('<I', v)
    if isinstance(v, float):
        return struct.pack('<I', GGUF_F32) + struct.pack('<f', v)
    if isinstance(v, str):
        return struct.pack('<I', GGUF_STRING) + _str(v)
    raise TypeError(type(v))


def write_gguf(path, metadata, tensors, alignment=32):
    """tensors: list of (name, float32 ndarray) in numpy (row-major) shape; GGUF dims reversed."""
    head = b'GGUF' + struct.pack('<IQQ', 3, len(tensors), len(metadata))
    for k, v in metadata.items():
        head += _str(k) + _value(v)
    offset = 0
    infos = b''
    blobs = []
    for name, arr in tensors:
        arr = np.ascontiguousarray(arr, dtype=np.float32)
        dims = list(reversed(arr.shape))
        infos += _str(name) + struct.pack('<I', len(dims)) + b''.join(struct.pack('<Q', d) for d in dims)
        infos += struct.pack('<IQ', 0, offset)
        blobs.append((offset, arr.tobytes()))
        offset = (offset + arr.nbytes + alignment - 1) // alignment * alignment
    data = head + infos
    data += b'\0' * ((alignment - len(data) % alignment) % alignment)
    with open(path, 'wb') as f:
        f.write(data)
        pos = 0
        for off, blob in blobs:
            f.write(b'\0' * (off - pos))
            f.write(blob)
            pos = off + len(blob)


# ---------------------------------------------------------------- HF -> GGUF ----------------
def permute(w, n_head):
    # HF rotate-half row order -> adjacent pairs, per head.
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def base_metadata(cfg, arch, head_dim, rope_base):
    """The keys every architecture's file has."""
    return {
        'general.architecture': arch,
        'general.name': 'hf-random-' + arch,
        f'{arch}.context_length': int(cfg.max_position_embeddings),
        f'{arch}.embedding_length': int(cfg.hidden_size),
        f'{arch}.block_count': int(cfg.num_hidden_layers),
        f'{arch}.feed_forward_length': int(cfg.intermediate_size),
        f'{arch}.attention.head_count': int(cfg.num_attention_heads),
        f'{arch}.attention.head_count_kv': int(cfg.num_key_value_heads),
        f'{arch}.attention.key_length': int(head_dim),
        f'{arch}.attention.value_length': int(head_dim),
        f'{arch}.rope.dimension_count': int(head_dim),
        f'{arch}.rope.freq_base': rope_base,
        f'{arch}.attention.layer_norm_rms_epsilon': float(cfg.rms_norm_eps),
    }


def rope_thetas(cfg):
    """(global base, local base) of a config: transformers 5 keeps them per layer type in
    rope_parameters, earlier versions in rope_theta / rope_local_base_freq."""
    rp = getattr(cfg, 'rope_parameters', None)
    if isinstance(rp, dict) and 'full_attention' in rp:
        full = rp['full_attention']
        local = rp.get('sliding_attention', full)
        assert full.get('rope_type', 'default') == 'default', full
        return float(full['rope_theta']), float(local['rope_theta'])
    base = getattr(cfg, 'rope_theta', None) or rp['rope_theta']
    return float(base), float(getattr(cfg, 'rope_local_base_freq', None) or base)


def convert_gemma(model, arch, path):
    """Gemma 2 / 3 as llama.cpp's converter writes them: RMSNorm weights with Gemma's 1 added,
    rotate-half rope as stored (NeoX), the window layers as one flag per layer."""
    cfg = model.config
    sd = {k: v.detach().to(torch.float32).cpu().numpy() for k, v in model.state_dict().items()}
    sd = {k[len('model.'):] if k.startswith('model.') else k: v for k, v in sd.items()}
    sd = {k[len('language_model.'):] if k.startswith('language_model.') else k: v for k, v in sd.items()}
    head_dim = cfg.head_dim
    assert cfg.query_pre_attn_scalar == head_dim  # GGUF has no key for it: 1/sqrt(head_dim)
    glob, local = rope_thetas(cfg)
    windowed = [t == 'sliding_attention' for t in cfg.layer_types]
    md = base_metadata(cfg, arch, head_dim, glob)
    md.update({
        f'{arch}.rope.freq_base_swa': local,
        f'{arch}.attention.sliding_window': int(cfg.sliding_window),
        f'{arch}.attention.sliding_window_pattern': windowed,
    })
    for key in ('attn_logit_softcapping', 'final_logit_softcapping'):
        if getattr(cfg, key, None):
            md[f'{arch}.{key}'] = float(getattr(cfg, key))
    plus1 = lambda name: sd[name] + 1.0
    t = [('token_embd.weight', sd['embed_tokens.weight']), ('output_norm.weight', plus1('norm.weight'))]
    for i in range(cfg.num_hidden_layers):
        p, b = f'layers.{i}.', f'blk.{i}.'
        t += [(b + 'attn_norm.weight', plus1(p + 'input_layernorm.weight')),
              (b + 'attn_q.weight', sd[p + 'self_attn.q_proj.weight']),
              (b + 'attn_k.weight', sd[p + 'self_attn.k_proj.weight']),
              (b + 'attn_v.weight', sd[p + 'self_attn.v_proj.weight']),
              (b + 'attn_output.weight', sd[p + 'self_attn.o_proj.weight']),
              (b + 'post_attention_norm.weight', plus1(p + 'post_attention_layernorm.weight')),
              (b + 'ffn_norm.weight', plus1(p + 'pre_feedforward_layernorm.weight')),
              (b + 'ffn_gate.weight', sd[p + 'mlp.gate_proj.weight']),
              (b + 'ffn_up.weight', sd[p + 'mlp.up_proj.weight']),
              (b + 'ffn_down.weight', sd[p + 'mlp.down_proj.weight']),
              (b + 'post_ffw_norm.weight', plus1(p + 'post_feedforward_layernorm.weight'))]
        if arch == 'gemma3':
            t += [(b + 'attn_q_norm.weight', plus1(p + 'self_attn.q_norm.weight')),
                  (b + 'attn_k_norm.weight', plus1(p + 'self_attn.k_norm.weight'))]
    write_gguf(path, md, t)


def expert_tensors(sd, p, n_expert, hidden, n_ff):
    """Layer p's experts as stacked numpy arrays gate [E, F, D], up [E, F, D], down [E, D, F]:
    transformers 5 keeps them fused (gate_up_proj, down_proj), earlier versions one module each."""
    for base in (p + 'mlp.experts.', p + 'block_sparse_moe.experts.'):
        if base + 'gate_up_proj' in sd:
            gu, dn = sd[base + 'gate_up_proj'], sd[base + 'down_proj']
            if gu.shape[1:] == (hidden, 2 * n_ff):
                gu = gu.transpose(0, 2, 1)
            if dn.shape[1:] == (n_ff, hidden):
                dn = dn.transpose(0, 2, 1)
            assert gu.shape[1:] == (2 * n_ff, hidden) and dn.shape[1:] == (hidden, n_ff), (gu.shape, dn.shape)
            return gu[:, :n_ff], gu[:, n_ff:], dn
        for g, u, d in (('gate_proj', 'up_proj', 'down_proj'), ('w1', 'w3', 'w2')):
            if base + f'0.{g}.weight' in sd:
                stack = lambda n: np.stack([sd[base + f'{e}.{n}.weight'] for e in range(n_expert)])
                return stack(g), stack(u), stack(d)
    raise KeyError('no experts under ' + p + ': ' + ', '.join(k for k in sd if k.startswith(p)))


def convert(model, arch, path, extra=None):
    """extra: further metadata keys (an embedding model's pooling_type)."""
    if arch.startswith('gemma'):
        return convert_gemma(model, arch, path)
    cfg = model.config
    sd = {k: v.detach().to(torch.float32).cpu().numpy() for k, v in model.state_dict().items()}
    n_head, n_kv = cfg.num_attention_heads, cfg.num_key_value_heads
    head_dim = getattr(cfg, 'head_dim', None) or cfg.hidden_size // n_head
    md = base_metadata(cfg, arch, head_dim,
                       float(getattr(cfg, 'rope_theta', None) or cfg.rope_parameters['rope_theta']))
    t = [('token_embd.weight', sd['model.embed_tokens.weight'])]
    if 'lm_head.weight' in sd and not cfg.tie_word_embeddings:
        t.append(('output.weight', sd['lm_head.weight']))
    t.append(('output_norm.weight', sd['model.norm.weight']))
    n_expert = getattr(cfg, 'num_local_experts', None) or getattr(cfg, 'num_experts', None) or 0
    if n_expert:
        n_ff_exp = getattr(cfg, 'moe_intermediate_size', None) or cfg.intermediate_size
        md[f'{arch}.expert_count'] = int(n_expert)
        md[f'{arch}.expert_used_count'] = int(cfg.num_experts_per_tok)
        md[f'{arch}.expert_feed_forward_length'] = int(n_ff_exp)
        if getattr(cfg, 'shared_expert_intermediate_size', None):
            md[f'{arch}.expert_shared_feed_forward_length'] = int(cfg.shared_expert_intermediate_size)
    for i in range(cfg.num_hidden_layers):
        p = f'model.layers.{i}.'
        b = f'blk.{i}.'
        t += [(b + 'attn_norm.weight', sd[p + 'input_layernorm.weight']),
              (b + 'attn_output.weight', sd[p + 'self_attn.o_proj.weight']),
              (b + 'ffn_norm.weight', sd[p + 'post_attention_layernorm.weight'])]
        if n_expert:
            router = sd.get(p + 'mlp.gate.weight', sd.get(p + 'block_sparse_moe.gate.weight'))
            gate, up, down = expert_tensors(sd, p, n_expert, cfg.hidden_size, n_ff_exp)
            t += [(b + 'ffn_gate_inp.weight', router), (b + 'ffn_gate_exps.weight', gate),
                  (b + 'ffn_up_exps.weight', up), (b + 'ffn_down_exps.weight', down)]
            if p + 'mlp.shared_expert.down_proj.weight' in sd:
                t += [(b + 'ffn_gate_shexp.weight', sd[p + 'mlp.shared_expert.gate_proj.weight']),
                      (b + 'ffn_up_shexp.weight', sd[p + 'mlp.shared_expert.up_proj.weight']),
                      (b + 'ffn_down_shexp.weight', sd[p + 'mlp.shared_expert.down_proj.weight']),
                      (b + 'ffn_gate_inp_shexp.weight', sd[p + 'mlp.shared_expert_gate.weight'].reshape(-1))]
        else:
            t.append((b + 'ffn_down.weight', sd[p + 'mlp.down_proj.weight']))
        if arch == 'phi3':
            # Fused tensors as GGUF stores them: QKV rows, then gate rows followed by up rows.
            t += [(b + 'attn_qkv.weight', sd[p + 'self_attn.qkv_proj.weight']),
                  (b + 'ffn_up.weight', sd[p + 'mlp.gate_up_proj.weight'])]
            continue
        q, k = sd[p + 'self_attn.q_proj.weight'], sd[p + 'self_attn.k_proj.weight']
        if arch == 'llama':
            q, k = permute(q, n_head), permute(k, n_kv)
        t += [(b + 'attn_q.weight', q), (b + 'attn_k.weight', k),
              (b + 'attn_v.weight', sd[p + 'self_attn.v_proj.weight'])]
        if not n_expert:
            t += [(b + 'ffn_gate.weight', sd[p + 'mlp.gate_proj.weight']),
                  (b + 'ffn_up.weight', sd[p + 'mlp.up_proj.weight'])]
        if arch in ('qwen2', 'qwen2moe'):
            t += [(b + 'attn_q.bias', sd[p + 'self_attn.q_proj.bias']),
                  (b + 'attn_k.bias', sd[p + 'self_attn.k_proj.bias']),
                  (b + 'attn_v.bias', sd[p + 'self_attn.v_proj.bias'])]
        if arch in ('qwen3', 'qwen3moe'):
            t += [(b + 'attn_q_norm.weight', sd[p + 'self_attn.q_norm.weight']),
                  (b + 'attn_k_norm.weight', sd[p + 'self_attn.k_norm.weight'])]
    if arch == 'llama' and getattr(model.model.rotary_emb, 'inv_freq', None) is not None:
        # Llama 3.1 scaling: GGUF stores the per-frequency divisors as rope_freqs.weight.
        inv = model.model.rotary_emb.inv_freq.double().cpu().numpy()
        base = md['llama.rope.freq_base'] ** (-np.arange(0, head_dim, 2, dtype=np.float64) / head_dim)
        factors = base / inv
        if np.abs(factors - 1).max() > 1e-12:
            t.append(('rope_freqs.weight', factors.astype(np.float32)))
    md.update(extra or {})
    write_gguf(path, md, t)


def randomize(model, seed):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if 'norm' in name:
                p.copy_(1 + 0.1 * torch.randn(p.shape, generator=g, dtype=p.dtype))
            else:
                p.copy_(0.08 * torch.randn(p.shape, generator=g, dtype=p.dtype))


# DESIGN.md's whole-model bounds: activations and KV cache in F32, or in a half type.
BOUNDS = {'f32': 1e-4, 'f16': 1e-2, 'bf16': 1e-2}

CASES = [
    ('llama-gqa', 'llama', transformers.LlamaConfig, dict(
        vocab_size=320, hidden_size=128, intermediate_size=344, num_hidden_layers=3,
        num_attention_heads=8, num_key_value_heads=2, rope_theta=500000.0, rms_norm_eps=1e-5,
        max_position_embeddings=4096)),
    ('llama31-rope-scaling', 'llama', transformers.LlamaConfig, dict(
        vocab_size=320, hidden_size=128, intermediate_size=256, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=1, rope_theta=500000.0, rms_norm_eps=1e-5,
        max_position_embeddings=131072,
        rope_scaling=dict(rope_type='llama3', factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0,
                          original_max_position_embeddings=64))),
    ('mistral', 'llama', transformers.MistralConfig, dict(
        vocab_size=300, hidden_size=160, intermediate_size=448, num_hidden_layers=2,
        num_attention_heads=10, num_key_value_heads=2, rope_theta=1000000.0, rms_norm_eps=1e-5,
        max_position_embeddings=4096, sliding_window=None)),
    ('qwen2', 'qwen2', transformers.Qwen2Config, dict(
        vocab_size=300, hidden_size=128, intermediate_size=320, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, rope_theta=1000000.0, rms_norm_eps=1e-6,
        max_position_embeddings=4096, tie_word_embeddings=True)),
    ('qwen3', 'qwen3', transformers.Qwen3Config, dict(
        vocab_size=300, hidden_size=128, intermediate_size=320, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, head_dim=48, rope_theta=1000000.0,
        rms_norm_eps=1e-6, max_position_embeddings=4096, tie_word_embeddings=False)),
    # Windows of 16 keys over the 64-token prompt; Gemma 2's soft-caps low enough to bend the
    # scores; head dim 256 (Gemma's) in one case of each.
    ('gemma2', 'gemma2', transformers.Gemma2Config, dict(
        vocab_size=300, hidden_size=128, intermediate_size=320, num_hidden_layers=3,
        num_attention_heads=4, num_key_value_heads=2, head_dim=32, query_pre_attn_scalar=32,
        rms_norm_eps=1e-6, max_position_embeddings=4096, sliding_window=16,
        attn_logit_softcapping=4.0, final_logit_softcapping=5.0)),
    ('gemma2-d256', 'gemma2', transformers.Gemma2Config, dict(
        vocab_size=300, hidden_size=256, intermediate_size=512, num_hidden_layers=2,
        num_attention_heads=2, num_key_value_heads=1, head_dim=256, query_pre_attn_scalar=256,
        rms_norm_eps=1e-6, max_position_embeddings=4096, sliding_window=16)),
    ('gemma3', 'gemma3', transformers.Gemma3TextConfig, dict(
        vocab_size=300, hidden_size=128, intermediate_size=320, num_hidden_layers=7,
        num_attention_heads=4, num_key_value_heads=2, head_dim=32, query_pre_attn_scalar=32,
        rms_norm_eps=1e-6, max_position_embeddings=4096, sliding_window=16)),
    ('gemma3-d256', 'gemma3', transformers.Gemma3TextConfig, dict(
        vocab_size=300, hidden_size=256, intermediate_size=512, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=1, head_dim=256, query_pre_attn_scalar=256,
        rms_norm_eps=1e-6, max_position_embeddings=4096, sliding_window=16)),
    # Mixtures of experts: 8 experts (Mixtral: 2 a token; Qwen: 3, Qwen2-MoE with its shared
    # expert and no renormalization, Qwen3-MoE renormalized). Expert widths whose doubles differ
    # from hidden_size, so that a fused [E, 2F, D] tensor cannot be mistaken for [E, D, 2F].
    ('mixtral', 'llama', transformers.MixtralConfig, dict(
        vocab_size=300, hidden_size=128, intermediate_size=96, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, num_local_experts=8, num_experts_per_tok=2,
        rope_theta=1000000.0, rms_norm_eps=1e-5, max_position_embeddings=4096, sliding_window=None)),
    ('qwen2moe', 'qwen2moe', transformers.Qwen2MoeConfig, dict(
        vocab_size=300, hidden_size=128, intermediate_size=256, moe_intermediate_size=48,
        shared_expert_intermediate_size=160, num_experts=8, num_experts_per_tok=3,
        norm_topk_prob=False, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
        rope_theta=1000000.0, rms_norm_eps=1e-6, max_position_embeddings=4096,
        decoder_sparse_step=1, mlp_only_layers=[], use_sliding_window=False)),
    ('qwen3moe', 'qwen3moe', transformers.Qwen3MoeConfig, dict(
        vocab_size=300, hidden_size=128, intermediate_size=256, moe_intermediate_size=48,
        num_experts=8, num_experts_per_tok=3, norm_topk_prob=True, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, head_dim=32, rope_theta=1000000.0,
        rms_norm_eps=1e-6, max_position_embeddings=4096, decoder_sparse_step=1,
        mlp_only_layers=[], tie_word_embeddings=False)),
    ('phi3', 'phi3', transformers.Phi3Config, dict(
        vocab_size=300, hidden_size=128, intermediate_size=256, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=4, rope_theta=10000.0, rms_norm_eps=1e-5,
        max_position_embeddings=4096, original_max_position_embeddings=4096, pad_token_id=0,
        bos_token_id=1, eos_token_id=2, tie_word_embeddings=False)),
]


def router_margins(model, ids, k):
    """Per position, the smallest margin over the mixture-of-experts layers between the k-th and
    (k+1)-th router logits of the float64 reference (None for a dense model): where it is below a
    half type's error, that type may choose other experts there."""
    layers = model.model.layers
    routers = []
    for layer in layers:
        mlp = getattr(layer, 'mlp', None) or getattr(layer, 'block_sparse_moe', None)
        gate = getattr(mlp, 'gate', None)
        if gate is None or getattr(gate, 'weight', None) is None or gate.weight.shape[0] <= k:
            return None
        routers.append(gate.weight)
    inputs = []
    hooks = [l.post_attention_layernorm.register_forward_hook(lambda m, a, o: inputs.append(o))
             for l in layers]
    with torch.no_grad():
        model(ids[None])
    for h in hooks:
        h.remove()
    margin = None
    for x, w in zip(inputs, routers):
        with torch.no_grad():
            top = torch.topk(x[0] @ w.T, k + 1, dim=-1).values
        m = (top[:, k - 1] - top[:, k]).detach().numpy()
        margin = m if margin is None else np.minimum(margin, m)
    return margin


def main():
    forge, work = sys.argv[1], sys.argv[2]
    out_json = sys.argv[sys.argv.index('--json') + 1] if '--json' in sys.argv else None
    dtypes = (sys.argv[sys.argv.index('--dtypes') + 1] if '--dtypes' in sys.argv else 'f32').split(',')
    os.makedirs(work, exist_ok=True)
    torch.manual_seed(0)
    results, ok = [], True
    for name, arch, cls, kw in CASES:
        cfg = cls(**kw)
        cfg.attn_implementation = 'eager'
        model = transformers.AutoModelForCausalLM.from_config(cfg, attn_implementation='eager')
        if hasattr(model, 'set_experts_implementation'):  # transformers 5: one loop, any dtype
            model.set_experts_implementation('eager')
        randomize(model, 1234)
        model = model.double().eval()
        path = os.path.join(work, name + '.gguf')
        convert(model, arch, path)
        ids = torch.randint(0, cfg.vocab_size, (64,), generator=torch.Generator().manual_seed(7))
        with torch.no_grad():
            ref = model(ids[None]).logits[0].numpy()
        k = getattr(cfg, 'num_experts_per_tok', 0)
        margins = router_margins(model, ids, k) if k else None
        out = os.path.join(work, name + '.f32')
        for dtype, chunk in [(d, c) for d in dtypes for c in (0, 13)]:
            bound = BOUNDS[dtype]
            r = subprocess.run([forge, 'logits', '-m', path, '--ids', ','.join(map(str, ids.tolist())),
                                '--out', out, '--chunk', str(chunk), '--dtype', dtype],
                               capture_output=True, text=True)
            if r.returncode != 0:
                print(f'{name}: forge failed: {r.stderr.strip()}')
                ok = False
                results.append(dict(case=name, dtype=dtype, chunk=chunk, error=r.stderr.strip()))
                continue
            got = np.fromfile(out, dtype=np.float32).reshape(ref.shape)
            # Mixtures of experts: only positions whose every router choice (in every layer) is
            # clear of the dtype's error; at a near-tie the dtype may choose other experts.
            keep = np.ones(ref.shape[0], dtype=bool)
            if margins is not None:
                keep = margins > bound
            err = float(np.abs(got[keep] - ref[keep]).max() / np.abs(ref[keep]).max())
            passed = bool(np.isfinite(got).all() and err <= bound)
            ok &= passed
            left_out = int((~keep).sum())
            results.append(dict(case=name, arch=arch, dtype=dtype, chunk=chunk, normalized_error=err,
                                bound=bound, passed=passed, positions_left_out=left_out))
            print(f'{name:22s} arch={arch:8s} {dtype} chunk={chunk:2d}  normalized error {err:.3e}  '
                  f'{"PASS" if passed else "FAIL"}' + (f'  ({left_out} of {len(keep)} positions '
                  'with a router near-tie left out)' if left_out else ''))
    if out_json:
        with open(out_json, 'w') as f:
            json.dump(dict(transformers=transformers.__version__, torch=torch.__version__,
                           bounds=BOUNDS, results=results), f, indent=2)
    sys.exit(0 if ok else 1)


if __name__ == '__main__':
    main()
