"""Reference PyTorch pieces for statiformer's golden data and demo model.

Contents:

* annotated-transformer style modules (LayerNorm with unbiased std, MultiHeadedAttention with
  ``linears.0..3``, pre-norm SublayerConnection, Encoder/Decoder with a final norm, Embeddings,
  PositionalEncoding, Generator, ``make_model``, ``greedy_decode``);
* ``TorchEncoderDecoder``: the same embedding/PE/generator/greedy loop around
  ``nn.TransformerEncoder``/``nn.TransformerDecoder`` stacks;
* name maps from PyTorch state_dicts to statiformer's canonical names (tools/GOLDEN_FORMAT.md);
* a writer and a reader for the golden text format (version 1).

Everything here is deterministic given ``torch.manual_seed``; callers should also call
``torch.set_num_threads(1)``.
"""

import copy
import math
import re

import torch
import torch.nn as nn
import torch.nn.functional as F

# --------------------------------------------------------------------------------------------
# Annotated-transformer modules
# --------------------------------------------------------------------------------------------


def clones(module, n):
    """n independent deep copies of ``module`` in a ModuleList."""
    return nn.ModuleList([copy.deepcopy(module) for _ in range(n)])


class LayerNorm(nn.Module):
    """Annotated-transformer LayerNorm: a_2 * (x - mean) / (std + eps) + b_2, unbiased std."""

    def __init__(self, features, eps=1e-6):
        super().__init__()
        self.a_2 = nn.Parameter(torch.ones(features))
        self.b_2 = nn.Parameter(torch.zeros(features))
        self.eps = eps

    def forward(self, x):
        mean = x.mean(-1, keepdim=True)
        std = x.std(-1, keepdim=True)
        return self.a_2 * (x - mean) / (std + self.eps) + self.b_2


def subsequent_mask(size):
    """[1, size, size] bool mask, True where position j <= i may be attended."""
    attn_shape = (1, size, size)
    return torch.triu(torch.ones(attn_shape), diagonal=1).type(torch.uint8) == 0


def attention(query, key, value, mask=None, fill=-1e9):
    """Scaled dot-product attention; ``mask`` is 1/True where attending is allowed."""
    d_k = query.size(-1)
    scores = torch.matmul(query, key.transpose(-2, -1)) / math.sqrt(d_k)
    if mask is not None:
        scores = scores.masked_fill(mask == 0, fill)
    p_attn = scores.softmax(dim=-1)
    return torch.matmul(p_attn, value), p_attn


class MultiHeadedAttention(nn.Module):
    """Annotated-transformer multi-head attention: linears.0..3 are q, k, v, o."""

    def __init__(self, h, d_model, dropout=0.0):
        super().__init__()
        assert d_model % h == 0
        self.d_k = d_model // h
        self.h = h
        self.linears = clones(nn.Linear(d_model, d_model), 4)
        self.attn = None
        self.dropout = nn.Dropout(p=dropout)

    def forward(self, query, key, value, mask=None):
        if mask is not None:
            mask = mask.unsqueeze(1)  # same mask for every head
        nbatches = query.size(0)
        query, key, value = [
            lin(x).view(nbatches, -1, self.h, self.d_k).transpose(1, 2)
            for lin, x in zip(self.linears, (query, key, value))
        ]
        x, self.attn = attention(query, key, value, mask=mask)
        x = x.transpose(1, 2).contiguous().view(nbatches, -1, self.h * self.d_k)
        return self.linears[-1](x)


class PositionwiseFeedForward(nn.Module):
    """w_2(dropout(relu(w_1(x))))."""

    def __init__(self, d_model, d_ff, dropout=0.0):
        super().__init__()
        self.w_1 = nn.Linear(d_model, d_ff)
        self.w_2 = nn.Linear(d_ff, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        return self.w_2(self.dropout(self.w_1(x).relu()))


class SublayerConnection(nn.Module):
    """Pre-norm residual: x + dropout(sublayer(norm(x)))."""

    def __init__(self, size, dropout=0.0):
        super().__init__()
        self.norm = LayerNorm(size)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, sublayer):
        return x + self.dropout(sublayer(self.norm(x)))


class EncoderLayer(nn.Module):
    """Self-attention then feed-forward, each in a SublayerConnection."""

    def __init__(self, size, self_attn, feed_forward, dropout=0.0):
        super().__init__()
        self.self_attn = self_attn
        self.feed_forward = feed_forward
        self.sublayer = clones(SublayerConnection(size, dropout), 2)
        self.size = size

    def forward(self, x, mask):
        x = self.sublayer[0](x, lambda x: self.self_attn(x, x, x, mask))
        return self.sublayer[1](x, self.feed_forward)


class Encoder(nn.Module):
    """N layers and a final LayerNorm."""

    def __init__(self, layer, n):
        super().__init__()
        self.layers = clones(layer, n)
        self.norm = LayerNorm(layer.size)

    def forward(self, x, mask):
        for layer in self.layers:
            x = layer(x, mask)
        return self.norm(x)


class DecoderLayer(nn.Module):
    """Self-attention, source attention, feed-forward."""

    def __init__(self, size, self_attn, src_attn, feed_forward, dropout=0.0):
        super().__init__()
        self.size = size
        self.self_attn = self_attn
        self.src_attn = src_attn
        self.feed_forward = feed_forward
        self.sublayer = clones(SublayerConnection(size, dropout), 3)

    def forward(self, x, memory, src_mask, tgt_mask):
        m = memory
        x = self.sublayer[0](x, lambda x: self.self_attn(x, x, x, tgt_mask))
        x = self.sublayer[1](x, lambda x: self.src_attn(x, m, m, src_mask))
        return self.sublayer[2](x, self.feed_forward)


class Decoder(nn.Module):
    """N decoder layers and a final LayerNorm."""

    def __init__(self, layer, n):
        super().__init__()
        self.layers = clones(layer, n)
        self.norm = LayerNorm(layer.size)

    def forward(self, x, memory, src_mask, tgt_mask):
        for layer in self.layers:
            x = layer(x, memory, src_mask, tgt_mask)
        return self.norm(x)


class Embeddings(nn.Module):
    """lut(x) * sqrt(d_model)."""

    def __init__(self, d_model, vocab):
        super().__init__()
        self.lut = nn.Embedding(vocab, d_model)
        self.d_model = d_model

    def forward(self, x):
        return self.lut(x) * math.sqrt(self.d_model)


class PositionalEncoding(nn.Module):
    """x + pe[:S] with the annotated transformer's float32 sinusoid table."""

    def __init__(self, d_model, dropout=0.0, max_len=5000):
        super().__init__()
        self.dropout = nn.Dropout(p=dropout)
        pe = torch.zeros(max_len, d_model)
        position = torch.arange(0, max_len).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2) * -(math.log(10000.0) / d_model))
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term)
        self.register_buffer("pe", pe.unsqueeze(0))

    def forward(self, x):
        x = x + self.pe[:, : x.size(1)].requires_grad_(False)
        return self.dropout(x)


class Generator(nn.Module):
    """log_softmax(proj(x))."""

    def __init__(self, d_model, vocab):
        super().__init__()
        self.proj = nn.Linear(d_model, vocab)

    def forward(self, x):
        return F.log_softmax(self.proj(x), dim=-1)


class EncoderDecoder(nn.Module):
    """Annotated-transformer encoder-decoder (src_embed/tgt_embed are Sequential(Embeddings, PE))."""

    def __init__(self, encoder, decoder, src_embed, tgt_embed, generator):
        super().__init__()
        self.encoder = encoder
        self.decoder = decoder
        self.src_embed = src_embed
        self.tgt_embed = tgt_embed
        self.generator = generator

    def encode(self, src, src_mask):
        return self.encoder(self.src_embed(src), src_mask)

    def decode(self, memory, src_mask, tgt, tgt_mask):
        return self.decoder(self.tgt_embed(tgt), memory, src_mask, tgt_mask)


def make_model(src_vocab, tgt_vocab, n=6, d_model=512, d_ff=2048, h=8, dropout=0.0):
    """The annotated transformer's make_model (xavier_uniform_ for every matrix)."""
    c = copy.deepcopy
    attn = MultiHeadedAttention(h, d_model)
    ff = PositionwiseFeedForward(d_model, d_ff, dropout)
    position = PositionalEncoding(d_model, dropout)
    model = EncoderDecoder(
        Encoder(EncoderLayer(d_model, c(attn), c(ff), dropout), n),
        Decoder(DecoderLayer(d_model, c(attn), c(attn), c(ff), dropout), n),
        nn.Sequential(Embeddings(d_model, src_vocab), c(position)),
        nn.Sequential(Embeddings(d_model, tgt_vocab), c(position)),
        Generator(d_model, tgt_vocab),
    )
    xavier_matrices(model)
    return model


# --------------------------------------------------------------------------------------------
# nn.Transformer* flavour with the same interface
# --------------------------------------------------------------------------------------------


class TorchEncoderDecoder(nn.Module):
    """Embeddings*sqrt(D) + PE, nn.TransformerEncoder/Decoder (final nn.LayerNorm), Generator.

    ``encode``/``decode`` take annotated-style masks (True = may attend): ``src_mask [B,1,S]``,
    ``tgt_mask [1,T,T]``, so ``greedy_decode`` works for both flavours.  Use it in train() mode
    with dropout 0 (no fast path; identical maths to eval).
    """

    def __init__(self, src_vocab, tgt_vocab, n, d_model, d_ff, h, norm_first=False, dropout=0.0,
                 max_len=5000):
        super().__init__()
        self.src_embed = Embeddings(d_model, src_vocab)
        self.tgt_embed = Embeddings(d_model, tgt_vocab)
        self.pos = PositionalEncoding(d_model, dropout, max_len)
        enc_layer = nn.TransformerEncoderLayer(d_model, h, d_ff, dropout, activation="relu",
                                               batch_first=True, norm_first=norm_first)
        dec_layer = nn.TransformerDecoderLayer(d_model, h, d_ff, dropout, activation="relu",
                                               batch_first=True, norm_first=norm_first)
        self.encoder = nn.TransformerEncoder(enc_layer, n, norm=nn.LayerNorm(d_model),
                                             enable_nested_tensor=False)
        self.decoder = nn.TransformerDecoder(dec_layer, n, norm=nn.LayerNorm(d_model))
        self.generator = Generator(d_model, tgt_vocab)

    def encode(self, src, src_mask):
        pad = ~src_mask[:, 0, :]
        return self.encoder(self.pos(self.src_embed(src)), src_key_padding_mask=pad)

    def decode(self, memory, src_mask, tgt, tgt_mask):
        causal = ~tgt_mask[0].bool()
        pad = ~src_mask[:, 0, :]
        return self.decoder(self.pos(self.tgt_embed(tgt)), memory, tgt_mask=causal,
                            memory_key_padding_mask=pad)


class TorchTokenClassifier(nn.Module):
    """Embeddings*sqrt(D) + PE, nn.TransformerEncoder (post-norm, no final norm), a per-token nn.Linear
    onto the classes: examples/classifier's Sequential (tools/train_classifier.py trains it,
    tools/export.py --emit-model exports it). ``forward(tokens [B,S], valid_len [B])`` -> logits [B,S,C].
    Use it in train() mode with dropout 0 (no fast path; identical maths to eval)."""

    def __init__(self, vocab, n, d_model, d_ff, h, classes, max_len=5000):
        super().__init__()
        self.src_embed = Embeddings(d_model, vocab)
        self.pos = PositionalEncoding(d_model, 0.0, max_len)
        layer = nn.TransformerEncoderLayer(d_model, h, d_ff, 0.0, activation="relu", batch_first=True,
                                           norm_first=False)
        self.encoder = nn.TransformerEncoder(layer, n, enable_nested_tensor=False)
        self.proj = nn.Linear(d_model, classes)

    def forward(self, tokens, valid_len):
        pad = ~padding_mask(valid_len, tokens.size(1))[:, 0, :]
        return self.proj(self.encoder(self.pos(self.src_embed(tokens)), src_key_padding_mask=pad))


def padding_mask(valid_len, s):
    """[B,1,S] bool: True for key positions < valid_len[b]."""
    valid_len = torch.as_tensor(valid_len).view(-1, 1, 1)
    return torch.arange(s).view(1, 1, s) < valid_len


def greedy_decode(model, src, src_mask, max_len, start_symbol, stop_symbol=None):
    """Greedy decoding of one source (batch 1).

    Returns (memory [1,S,D], ys [1,L] int64, logprobs [L-1,V], min_margin) where min_margin is
    the smallest top-1 minus top-2 log-prob gap over the steps.  Without ``stop_symbol`` it runs
    max_len - 1 steps; with it, it stops after emitting ``stop_symbol``.
    """
    memory = model.encode(src, src_mask)
    ys = torch.full((1, 1), start_symbol, dtype=torch.long)
    rows, margin = [], math.inf
    for _ in range(max_len - 1):
        out = model.decode(memory, src_mask, ys, subsequent_mask(ys.size(1)))
        prob = model.generator(out[:, -1])
        rows.append(prob[0])
        top2 = torch.topk(prob[0], 2).values
        margin = min(margin, float(top2[0] - top2[1]))
        next_word = int(torch.argmax(prob[0]))
        ys = torch.cat([ys, torch.full((1, 1), next_word, dtype=torch.long)], dim=1)
        if stop_symbol is not None and next_word == stop_symbol:
            break
    return memory, ys, torch.stack(rows), margin


class GptBlock(nn.Module):
    """A hand-written GPT block (GPT-2's shape): x = x + attn(norm1(x)); y = x + ff(norm2(x)),
    causal multi-head attention spelled out (separate q/k/v/o projections, scores masked with
    -inf above the diagonal, softmax, values), GELU (erf) MLP. Its parameter names are the
    canonical ones (self_attn.{q,k,v,o}, ff.linear{1,2}, norm{1,2}); no nn.MultiheadAttention."""

    def __init__(self, d_model, h, d_ff):
        super().__init__()
        self.h = h
        self.self_attn = nn.ModuleDict({n: nn.Linear(d_model, d_model) for n in "qkvo"})
        self.ff = nn.ModuleDict({"linear1": nn.Linear(d_model, d_ff),
                                 "linear2": nn.Linear(d_ff, d_model)})
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)

    def attn(self, x):
        b, s, d = x.shape
        hd = d // self.h
        a = self.self_attn

        def heads(t):
            return t.view(b, s, self.h, hd).transpose(1, 2)
        q, k, v = heads(a["q"](x)), heads(a["k"](x)), heads(a["v"](x))
        scores = q @ k.transpose(-2, -1) / math.sqrt(hd)
        blocked = torch.triu(torch.ones(s, s, dtype=torch.bool), diagonal=1)
        w = torch.softmax(scores.masked_fill(blocked, float("-inf")), dim=-1)
        return a["o"]((w @ v).transpose(1, 2).reshape(b, s, d))

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.ff["linear2"](F.gelu(self.ff["linear1"](self.norm2(x))))


class TorchDecoderOnly(nn.Module):
    """Decoder-only model: Embeddings*sqrt(D) + PE, N causal layers, optional final nn.LayerNorm,
    Generator. ``block="torch"``: nn.TransformerEncoder(nn.TransformerEncoderLayer) run with a
    causal mask (post- or pre-norm, relu or gelu); ``block="gpt"``: GptBlock layers (pre-norm,
    GELU). forward(tokens [1, L]) -> log-probs [L, V]. Use it in train() mode with dropout 0 (no
    fast path)."""

    def __init__(self, vocab, n, d_model, d_ff, h, norm_first=False, final_norm=True,
                 activation="relu", block="torch"):
        super().__init__()
        self.embed = Embeddings(d_model, vocab)
        self.pos = PositionalEncoding(d_model)
        self.block = block
        if block == "torch":
            layer = nn.TransformerEncoderLayer(d_model, h, d_ff, 0.0, activation=activation,
                                               batch_first=True, norm_first=norm_first)
            self.stack = nn.TransformerEncoder(layer, n, norm=nn.LayerNorm(d_model) if final_norm
                                               else None, enable_nested_tensor=False)
        else:
            self.layers = nn.ModuleList([GptBlock(d_model, h, d_ff) for _ in range(n)])
            self.norm = nn.LayerNorm(d_model) if final_norm else None
        self.generator = Generator(d_model, vocab)

    def forward(self, tokens):
        x = self.pos(self.embed(tokens))
        s = tokens.shape[1]
        if self.block == "torch":
            x = self.stack(x, mask=torch.triu(torch.ones(s, s, dtype=torch.bool), diagonal=1))
        else:
            for layer in self.layers:
                x = layer(x)
            if self.norm is not None:
                x = self.norm(x)
        return self.generator(x)[0]


def canonical_from_decoder_only(model):
    """Canonical names of a TorchDecoderOnly: embed.weight, layers.<i>.*, norm.*, generator.proj.*
    (the names DecoderOnly::Params::visit gives; PE dropped, in_proj split)."""
    named = []
    for key, value in model.state_dict().items():
        if key.startswith("pos."):
            continue
        key = re.sub(r"^embed\.lut\.", "embed.", key)
        key = re.sub(r"^stack\.", "", key)
        named.extend(canonical_from_torch({key: value}))
    return named


def greedy_generate(model, prompt, n_new):
    """Greedy continuation of prompt [L] by rerunning the whole sequence each step (no cache).
    Returns (prompt log-probs [L, V], new tokens [n_new], each new token's step log-probs
    [n_new, V], min_margin: the smallest top-1 minus top-2 gap over the steps)."""
    ys = prompt.clone()
    rows, margin = [], math.inf
    for _ in range(n_new):
        lp = model(ys[None])[-1]
        rows.append(lp)
        top2 = torch.topk(lp, 2).values
        margin = min(margin, float(top2[0] - top2[1]))
        ys = torch.cat([ys, torch.argmax(lp).view(1)])
    return model(prompt[None]), ys[len(prompt):], torch.stack(rows), margin


# --------------------------------------------------------------------------------------------
# Random parameters
# --------------------------------------------------------------------------------------------


def randomize_vectors(module):
    """Make every 1-D parameter non-trivial: norm gains 1 + 0.1*randn, biases/shifts 0.1*randn.

    PyTorch initialises LayerNorm to (1, 0) and MultiheadAttention biases to 0, which would
    leave those code paths untested.  Uses the global torch RNG (deterministic after a seed).
    """
    with torch.no_grad():
        for name, p in module.named_parameters():
            if p.dim() != 1:
                continue
            leaf = name.rsplit(".", 1)[-1]
            is_gain = leaf == "a_2" or (leaf == "weight" and "norm" in name)
            noise = 0.1 * torch.randn(p.shape)
            p.copy_(1.0 + noise if is_gain else noise)


def scale_vectors(module, scale, exclude=()):
    """Multiply every 1-D parameter (biases, LayerNorm gains and shifts) by ``scale``, except those
    whose name starts with one of ``exclude``.

    With inputs scaled alike, every activation of a layer is ~scale, so each LayerNorm sees rows of
    variance ~scale²: at scale 1e-2 (variance 1e-4) and below, its eps (1e-5 in the variance,
    1e-6 on the std) moves the output far beyond the tolerances, so a wrong eps fails the case.
    """
    with torch.no_grad():
        for name, p in module.named_parameters():
            if p.dim() == 1 and not name.startswith(tuple(exclude)):
                p.mul_(scale)


def reinit_layers(module):
    """Give deep-copied layer clones independent random weights (PyTorch's default init).

    nn.TransformerEncoder/Decoder deep-copy one layer N times; without this every layer of a
    stack would hold identical weights and a C++ bug that mixes up layers would go unnoticed.
    """
    for m in module.modules():
        if isinstance(m, nn.MultiheadAttention):
            m._reset_parameters()
        elif isinstance(m, (nn.Linear, nn.LayerNorm, nn.Embedding)):
            m.reset_parameters()


def xavier_matrices(module):
    """The annotated transformer's init: xavier_uniform_ on every parameter with dim > 1."""
    for p in module.parameters():
        if p.dim() > 1:
            nn.init.xavier_uniform_(p)


# --------------------------------------------------------------------------------------------
# Canonical names
# --------------------------------------------------------------------------------------------


def split_in_proj(key, value):
    """``...in_proj_weight`` / ``...in_proj_bias`` -> [(q,...), (k,...), (v,...)] pieces."""
    prefix, leaf = key.rsplit("in_proj_", 1)
    d = value.shape[0] // 3
    return [(f"{prefix}{n}.{leaf}", value[i * d:(i + 1) * d]) for i, n in enumerate("qkv")]


def _torch_key(key, layer_level):
    """Rename one nn.Transformer*-style key (in_proj handled by the caller)."""
    parts = key.split(".")
    out = []
    for i, p in enumerate(parts):
        if p == "multihead_attn":
            p = "cross_attn"
        elif p == "out_proj":
            p = "o"
        elif p in ("linear1", "linear2"):
            in_layer = (layer_level and i == 0) or (i >= 2 and parts[i - 2] == "layers")
            if in_layer:
                out.append("ff")
        out.append(p)
    return ".".join(out)


def canonical_from_torch(state_dict, layer_level=False, split=True):
    """Map an nn.Transformer*/nn.MultiheadAttention state_dict to canonical names.

    ``layer_level``: the dict is a single TransformerEncoderLayer/DecoderLayer, so top-level
    ``linear1/linear2`` become ``ff.linear1/ff.linear2`` (inside stacks ``layers.<i>.linear1``
    always do).  ``split=False`` keeps ``in_proj_weight/in_proj_bias`` packed.  Non-parameter
    buffers (the PE table) are dropped.  Returns a list of (name, tensor) in state_dict order.
    """
    out = []
    for key, value in state_dict.items():
        if key.endswith(".pe") or key == "pe":
            continue
        if "in_proj_" in key and split:
            out.extend(split_in_proj(_torch_key(key, layer_level), value))
        else:
            out.append((_torch_key(key, layer_level), value))
    return out


_ANNOTATED_RULES = [
    (r"\blinears\.0\.", "q."),
    (r"\blinears\.1\.", "k."),
    (r"\blinears\.2\.", "v."),
    (r"\blinears\.3\.", "o."),
    (r"\bsrc_attn\.", "cross_attn."),
    (r"\bfeed_forward\.w_1\.", "ff.linear1."),
    (r"\bfeed_forward\.w_2\.", "ff.linear2."),
    (r"\b(src_embed|tgt_embed)\.0\.lut\.", r"\1."),
    (r"\bnorm\.a_2$", "norm.weight"),
    (r"\bnorm\.b_2$", "norm.bias"),
    (r"^a_2$", "weight"),
    (r"^b_2$", "bias"),
]

_ENCDEC_ORDER = ["src_embed.", "tgt_embed.", "encoder.", "decoder.", "generator."]


def _annotated_key(key):
    """Rename one annotated-transformer key."""
    m = re.search(r"\bsublayer\.(\d+)\.norm\.(a_2|b_2)$", key)
    if m:
        leaf = "weight" if m.group(2) == "a_2" else "bias"
        return key[: m.start()] + f"norm{int(m.group(1)) + 1}.{leaf}"
    for pattern, repl in _ANNOTATED_RULES:
        key = re.sub(pattern, repl, key)
    return key


def canonical_from_annotated(state_dict):
    """Map an annotated-transformer state_dict to canonical names (list of (name, tensor)).

    A whole EncoderDecoder is reordered to the canonical src_embed, tgt_embed, encoder,
    decoder, generator order; the PE buffers are dropped.
    """
    out = [(_annotated_key(k), v) for k, v in state_dict.items()
           if not (k == "pe" or k.endswith(".pe"))]
    return order_encdec(out)


def order_encdec(named):
    """Stable-sort (name, tensor) pairs into canonical EncoderDecoder order (no-op otherwise)."""
    def rank(item):
        for i, prefix in enumerate(_ENCDEC_ORDER):
            if item[0].startswith(prefix):
                return i
        return -1
    return sorted(named, key=rank)


def canonical_from_torch_encdec(model):
    """Canonical names for a TorchEncoderDecoder (encoder/decoder stacks split, PE dropped)."""
    named = []
    for key, value in model.state_dict().items():
        if key.startswith("pos."):
            continue
        key = re.sub(r"^(src_embed|tgt_embed)\.lut\.", r"\1.", key)
        named.extend(canonical_from_torch({key: value}))
    return order_encdec(named)


# --------------------------------------------------------------------------------------------
# Golden text format (version 1)
# --------------------------------------------------------------------------------------------


# Columns of one weight panel (kWeightPanel in include/statiformer/config.hpp): a transposed matrix
# [rows, cols] is stored in column panels of this many columns, each row-major and contiguous, one
# after the other; a matrix of at most this many columns is plain row-major.
WEIGHT_PANEL = 64


def panel_order(t, panel=WEIGHT_PANEL):
    """The elements of a 2-D tensor [rows, cols] in column-panel order (1-D): panel after panel of
    `panel` columns (the last one narrower), each row-major. Plain row-major when cols <= panel or
    panel is 0. Mirrors stf::stored_index."""
    if panel == 0 or t.shape[1] <= panel:
        return t.contiguous().reshape(-1)
    return torch.cat([t[:, p:p + panel].contiguous().reshape(-1) for p in range(0, t.shape[1], panel)])


QUAD_K = 4  # kQuadK: reduction steps of an int8 weight in one 32-bit word


def quantize_weight(w):
    """The int8 weight of kernels/QUANTIZATION.md: w [out, in] (PyTorch's) -> (q int8 [out, in], s
    float32 [out]) with s[o] = max_i |w[o, i]| / 127 (float32, correctly rounded) and q[o, i] =
    clamp(round half to even(w[o, i] / s[o]), -127, 127) (one float32 division); a channel of zeros
    gets s = 0 and q = 0."""
    w = w.detach().to(torch.float32)
    a = w.abs().amax(dim=1)
    s = a / torch.tensor(127.0, dtype=torch.float32)
    safe = torch.where(s > 0, s, torch.ones_like(s))
    q = torch.where(s[:, None] > 0, torch.round(w / safe[:, None]), torch.zeros_like(w))
    return q.clamp(-127, 127).to(torch.int8), s


def quad_order(q, panel=WEIGHT_PANEL):
    """An int8 weight q [out, in] (PyTorch's layout) as statiformer stores it (1-D, int8): the
    transpose [in, out], in padded with zeros to a multiple of QUAD_K, in column panels of `panel`
    outputs, each panel as k-quads ([k / 4][o][k % 4]). Mirrors stf::qweight_index."""
    out_f, in_f = q.shape
    in4 = (in_f + QUAD_K - 1) // QUAD_K * QUAD_K
    qt = torch.zeros(in4, out_f, dtype=torch.int8)
    qt[:in_f] = q.t()
    chunks = []
    for p0 in range(0, out_f, panel):
        width = min(panel, out_f - p0)
        block = qt[:, p0:p0 + width].reshape(in4 // QUAD_K, QUAD_K, width).permute(0, 2, 1)
        chunks.append(block.contiguous().reshape(-1))
    return torch.cat(chunks)


def stored_transposed(name, dims):
    """Whether statiformer stores canonical parameter `name` (PyTorch shape `dims`) transposed:
    every linear weight ([out, in] in PyTorch) is stored [in, out] in column panels (panel_order);
    embeddings, norms and biases as they are. Mirrors ParamRef::transposed of the C++ schema, which
    is authoritative."""
    parts = name.split(".")
    return len(dims) == 2 and parts[-1] == "weight" and not (len(parts) > 1 and parts[-2].endswith("embed"))


def fmt_float(x):
    """'%.9g' of a float32 value (round-trips exactly); never inf/nan."""
    x = float(x)
    if not math.isfinite(x):
        raise ValueError(f"non-finite value {x} in golden data")
    return "%.9g" % x


def fmt_value(v):
    """A param value: bool -> 0/1, int -> decimal, str -> bare word."""
    if isinstance(v, bool):
        return "1" if v else "0"
    return str(v)


def golden_text(name, module, params, tolerance, tensors):
    """Render one golden file.

    params: list of (key, value); tolerance: (rtol, atol); tensors: list of (name, tensor or
    array-like).  Values are cast to float32 before formatting.
    """
    lines = ["stf-golden 1", f"case {name}", f"module {module}"]
    lines += [f"param {k} {fmt_value(v)}" for k, v in params]
    lines.append(f"tolerance {tolerance[0]:g} {tolerance[1]:g}")
    for tname, t in tensors:
        t = torch.as_tensor(t).detach().to(torch.float32)
        dims = list(t.shape)
        lines.append(" ".join(["tensor", tname, str(len(dims))] + [str(d) for d in dims]))
        lines.append(" ".join(fmt_float(x) for x in t.reshape(-1).tolist()))
    return "\n".join(lines) + "\n"


def read_golden(path):
    """Parse a golden file into dict(case, module, params{k: str}, tolerance, tensors{n: tensor})."""
    with open(path) as f:
        return parse_golden(f.read(), path)


def parse_golden(text, source="golden text"):
    """read_golden of a golden file's text."""
    lines = text.splitlines()
    if lines[0] != "stf-golden 1":
        raise ValueError(f"{source}: bad header {lines[0]!r}")
    result = {"params": {}, "tensors": {}}
    i = 1
    while i < len(lines):
        words = lines[i].split()
        if words[0] == "tensor":
            ndim = int(words[2])
            dims = [int(d) for d in words[3:3 + ndim]]
            values = [float(v) for v in lines[i + 1].split()]
            result["tensors"][words[1]] = torch.tensor(values, dtype=torch.float64).view(dims)
            i += 2
            continue
        if words[0] == "param":
            result["params"][words[1]] = words[2]
        elif words[0] == "tolerance":
            result["tolerance"] = (float(words[1]), float(words[2]))
        else:
            result[words[0]] = words[1]
        i += 1
    return result


def golden_drift(committed, fresh, allowed=1.0):
    """Compare a committed golden text with a fresh rendering of the same case (a --check).

    PyTorch's float32 results depend on the CPU that computes them (its vectorized kernels and BLAS
    follow the CPU: AVX-512 on one machine, AVX2 on another), so a regeneration elsewhere differs
    from the committed file in the last bits of the outputs. Everything else must be identical: the
    case, module, params and tolerance, every tensor's name and shape, and every value but for a
    drift within the case's declared tolerance |fresh - committed| <= atol + rtol·|committed| (the
    drift PyTorch's own rounding may show; a changed plan, seed, module or input moves values by far
    more, and integer data such as decoded tokens by at least 1).

    ``allowed`` is the share of that tolerance a value may drift: gen_golden.py --check allows
    gen_golden.DRIFT_ALLOWANCE (10 %: its tolerances are 10x the measured error, so a drift of a
    tenth of one is as much as PyTorch's rounding is ever measured to move); gen_io_fixtures.py
    keeps the default 1.0 (its tolerances are typed by hand, 1e-5, and the trained demo's log-probs
    of magnitude ~25 drift 42 % of that between AVX-512 and AVX2 BLAS kernels: ~1 ulp).

    Returns (problem, worst): problem is None or a description of the first difference; worst is
    the largest fraction of the tolerance any value drifted (0.0 when byte-identical). A zero
    tolerance (atol 0, rtol 0: the case is exact) allows no drift at all.
    """
    if committed == fresh:
        return None, 0.0
    a, b = parse_golden(committed, "committed"), parse_golden(fresh, "fresh")
    for key in ("case", "module", "params", "tolerance"):
        if a.get(key) != b.get(key):
            return f"{key}: {a.get(key)} committed, {b.get(key)} fresh", 0.0
    shapes_a = [(n, list(t.shape)) for n, t in a["tensors"].items()]
    shapes_b = [(n, list(t.shape)) for n, t in b["tensors"].items()]
    if shapes_a != shapes_b:
        return f"tensors {shapes_a} committed, {shapes_b} fresh", 0.0
    rtol, atol = a["tolerance"]
    worst = 0.0
    for name, want in a["tensors"].items():
        got = b["tensors"][name]
        diff = (got - want).abs().reshape(-1)
        if diff.numel() == 0:
            continue
        bound = atol + rtol * want.abs().reshape(-1)
        ratio = torch.where(diff == 0, torch.zeros_like(diff),
                            diff / torch.where(bound > 0, bound, torch.full_like(bound, math.nan)))
        ratio = torch.nan_to_num(ratio, nan=math.inf)
        i = int(ratio.argmax())
        if ratio[i] > allowed:
            return (f"tensor {name}[{i}]: {want.reshape(-1)[i].item():.9g} committed, {got.reshape(-1)[i].item():.9g} "
                    f"fresh: a drift of {ratio[i].item():.0%} of the tolerance (rtol {rtol:g}, atol {atol:g}), "
                    f"more than the {allowed:.0%} allowed"), ratio[i].item()
        worst = max(worst, ratio[i].item())
    return None, worst
