#!/usr/bin/env python3
"""Forge against HF transformers on random-weight models (runs where torch + transformers are).

For each case it builds a small random-weight HF model, converts it to an F32 GGUF with Forge's
own minimal writer below (llama's Q/K rows permuted to GGUF's adjacent-pair rope order, as the
usual HF-to-GGUF conversion does), runs `forge logits` on a 64-token prompt and compares every
position's logits with HF's float64 logits: normalized error max|d| / max|ref| must be <= 1e-4
(DESIGN.md, whole-model logits in F32).

usage: hf_compare.py FORGE_BINARY WORKDIR [--json OUT.json]
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


def convert(model, arch, path):
    cfg = model.config
    sd = {k: v.detach().to(torch.float32).cpu().numpy() for k, v in model.state_dict().items()}
    n_head, n_kv = cfg.num_attention_heads, cfg.num_key_value_heads
    head_dim = getattr(cfg, 'head_dim', None) or cfg.hidden_size // n_head
    md = {
        'general.architecture': arch,
        'general.name': 'hf-random-' + arch,
        f'{arch}.context_length': int(cfg.max_position_embeddings),
        f'{arch}.embedding_length': int(cfg.hidden_size),
        f'{arch}.block_count': int(cfg.num_hidden_layers),
        f'{arch}.feed_forward_length': int(cfg.intermediate_size),
        f'{arch}.attention.head_count': int(n_head),
        f'{arch}.attention.head_count_kv': int(n_kv),
        f'{arch}.attention.key_length': int(head_dim),
        f'{arch}.attention.value_length': int(head_dim),
        f'{arch}.rope.dimension_count': int(head_dim),
        f'{arch}.rope.freq_base': float(getattr(cfg, 'rope_theta', None) or cfg.rope_parameters['rope_theta']),
        f'{arch}.attention.layer_norm_rms_epsilon': float(cfg.rms_norm_eps),
    }
    t = [('token_embd.weight', sd['model.embed_tokens.weight'])]
    if 'lm_head.weight' in sd and not cfg.tie_word_embeddings:
        t.append(('output.weight', sd['lm_head.weight']))
    t.append(('output_norm.weight', sd['model.norm.weight']))
    for i in range(cfg.num_hidden_layers):
        p = f'model.layers.{i}.'
        b = f'blk.{i}.'
        t += [(b + 'attn_norm.weight', sd[p + 'input_layernorm.weight']),
              (b + 'attn_output.weight', sd[p + 'self_attn.o_proj.weight']),
              (b + 'ffn_norm.weight', sd[p + 'post_attention_layernorm.weight']),
              (b + 'ffn_down.weight', sd[p + 'mlp.down_proj.weight'])]
        if arch == 'phi3':
            # Fused tensors as GGUF stores them: QKV rows, then gate rows followed by up rows.
            t += [(b + 'attn_qkv.weight', sd[p + 'self_attn.qkv_proj.weight']),
                  (b + 'ffn_up.weight', sd[p + 'mlp.gate_up_proj.weight'])]
            continue
        q, k = sd[p + 'self_attn.q_proj.weight'], sd[p + 'self_attn.k_proj.weight']
        if arch == 'llama':
            q, k = permute(q, n_head), permute(k, n_kv)
        t += [(b + 'attn_q.weight', q), (b + 'attn_k.weight', k),
              (b + 'attn_v.weight', sd[p + 'self_attn.v_proj.weight']),
              (b + 'ffn_gate.weight', sd[p + 'mlp.gate_proj.weight']),
              (b + 'ffn_up.weight', sd[p + 'mlp.up_proj.weight'])]
        if arch == 'qwen2':
            t += [(b + 'attn_q.bias', sd[p + 'self_attn.q_proj.bias']),
                  (b + 'attn_k.bias', sd[p + 'self_attn.k_proj.bias']),
                  (b + 'attn_v.bias', sd[p + 'self_attn.v_proj.bias'])]
        if arch == 'qwen3':
            t += [(b + 'attn_q_norm.weight', sd[p + 'self_attn.q_norm.weight']),
                  (b + 'attn_k_norm.weight', sd[p + 'self_attn.k_norm.weight'])]
    if arch == 'llama' and getattr(model.model.rotary_emb, 'inv_freq', None) is not None:
        # Llama 3.1 scaling: GGUF stores the per-frequency divisors as rope_freqs.weight.
        inv = model.model.rotary_emb.inv_freq.double().cpu().numpy()
        base = md['llama.rope.freq_base'] ** (-np.arange(0, head_dim, 2, dtype=np.float64) / head_dim)
        factors = base / inv
        if np.abs(factors - 1).max() > 1e-12:
            t.append(('rope_freqs.weight', factors.astype(np.float32)))
    write_gguf(path, md, t)


def randomize(model, seed):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if 'norm' in name:
                p.copy_(1 + 0.1 * torch.randn(p.shape, generator=g, dtype=p.dtype))
            else:
                p.copy_(0.08 * torch.randn(p.shape, generator=g, dtype=p.dtype))


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
    ('phi3', 'phi3', transformers.Phi3Config, dict(
        vocab_size=300, hidden_size=128, intermediate_size=256, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=4, rope_theta=10000.0, rms_norm_eps=1e-5,
        max_position_embeddings=4096, original_max_position_embeddings=4096, pad_token_id=0,
        bos_token_id=1, eos_token_id=2, tie_word_embeddings=False)),
]


def main():
    forge, work = sys.argv[1], sys.argv[2]
    out_json = sys.argv[sys.argv.index('--json') + 1] if '--json' in sys.argv else None
    os.makedirs(work, exist_ok=True)
    torch.manual_seed(0)
    results, ok = [], True
    for name, arch, cls, kw in CASES:
        cfg = cls(**kw)
        cfg.attn_implementation = 'eager'
        model = transformers.AutoModelForCausalLM.from_config(cfg, attn_implementation='eager')
        randomize(model, 1234)
        model = model.double().eval()
        path = os.path.join(work, name + '.gguf')
        convert(model, arch, path)
        ids = torch.randint(0, cfg.vocab_size, (64,), generator=torch.Generator().manual_seed(7))
        with torch.no_grad():
            ref = model(ids[None]).logits[0].numpy()
        out = os.path.join(work, name + '.f32')
        for chunk in (0, 13):
            r = subprocess.run([forge, 'logits', '-m', path, '--ids', ','.join(map(str, ids.tolist())),
                                '--out', out, '--chunk', str(chunk)], capture_output=True, text=True)
            if r.returncode != 0:
                print(f'{name}: forge failed: {r.stderr.strip()}')
                ok = False
                results.append(dict(case=name, chunk=chunk, error=r.stderr.strip()))
                continue
            got = np.fromfile(out, dtype=np.float32).reshape(ref.shape)
            err = float(np.abs(got - ref).max() / np.abs(ref).max())
            passed = bool(np.isfinite(got).all() and err <= 1e-4)
            ok &= passed
            results.append(dict(case=name, arch=arch, chunk=chunk, normalized_error=err, passed=passed))
            print(f'{name:22s} arch={arch:6s} chunk={chunk:2d}  normalized error {err:.3e}  '
                  f'{"PASS" if passed else "FAIL"}')
    if out_json:
        with open(out_json, 'w') as f:
            json.dump(dict(transformers=transformers.__version__, torch=torch.__version__,
                           bound=1e-4, results=results), f, indent=2)
    sys.exit(0 if ok else 1)


if __name__ == '__main__':
    main()
