// statiformer — attention, generic: per group of rows, which strategy runs it (a target's own
// kernel, a tall group, a register block, spans, streaming), and the two-pass attention with
// weights. The strategies: streaming.hpp, wide_spans.hpp, register_block.hpp. See
// kernels/README.md.
#pragma once

#include <cmath>
#include <statiformer/kernels/api.hpp>
#include <statiformer/kernels/attention/register_block.hpp>
#include <statiformer/kernels/attention/select.hpp>
#include <statiformer/kernels/attention/x86_lane_blocks.hpp>
#include <statiformer/kernels/attention/x86_lanes.hpp>
#include <type_traits>

namespace stf::kernels_detail::generic {

/// Attention rows (Kernels::attention_rows, attention_row, attention_rows_weights): the choice, per
/// group of kAttentionRowGroup rows, of the strategy that runs it — the target's own kernel
/// (AttentionSelect), a tall group, one key block in registers, spans, or streaming key block by
/// key block — and the two-pass attention that returns the weights.
template <class Tag>
struct Attention : AttentionRegisterBlock<Tag> {
  using AttentionRegisterBlock<Tag>::kRegisterBlockVecs;
  using AttentionRegisterBlock<Tag>::group_block_rows;
  using AttentionRegisterBlock<Tag>::tall_group;
  using AttentionSpans<Tag>::attention_group_spans;
  using AttentionSpans<Tag>::kWideHeadScores;
  using typename AttentionStreaming<Tag>::ScoreScale;
  using typename AttentionStreaming<Tag>::GroupKeys;
  using AttentionStreaming<Tag>::kTallRowGroup;
  using AttentionStreaming<Tag>::kTallHeadVecs;
  using AttentionStreaming<Tag>::kBlockVecs;
  using AttentionStreaming<Tag>::allowed;
  using AttentionStreaming<Tag>::stream_block;
  using AttentionStreaming<Tag>::stream_group_prefix;
  using AttentionStreaming<Tag>::weighted_values_prefix;
  using AttentionStreaming<Tag>::weighted_values_acc;
  using AttentionStreaming<Tag>::group_keys;
  using Product<Tag>::gemm_plain;
  using Elementwise<Tag>::L;
  using Elementwise<Tag>::sum;
  using Elementwise<Tag>::max_of;
  using Elementwise<Tag>::div_map;
  using Elementwise<Tag>::exp_shifted;
  /// The target's own kernel for groups of rows that attend to the same keys, where the selection
  /// names one (kernels/attention/select.hpp): a struct, or void.
  using PrefixRows = typename AttentionSelect<Tag>::PrefixRows;
  /// The target's own kernel for calls of a vector of rows of a short head, with the rows across
  /// the lanes (AVX-512: kernels/attention/x86_lanes.hpp), or void.
  using LaneRows = typename AttentionSelect<Tag>::LaneRows;
  /// The target's own softmax steps with a vector of rows in lanes over key blocks (AVX-512:
  /// kernels/attention/x86_lane_blocks.hpp), or void.
  using LaneBlocks = typename AttentionSelect<Tag>::LaneBlocks;

  /// attention_rows (Kernels::attention_rows calls it), through a target's own kernel where it
  /// has one for groups whose rows all attend to the same keys [0, e), e >= 1 (Cortex-M:
  /// kernels/attention/<target>.hpp, the same operations per row; it declines group sizes it does
  /// not take),
  /// then attention_rows for the rows left. (Outside attention_rows: its set-up would run first.)
  static void attention_rows(const float* q, index_t q_stride, index_t n_rows, const float* kt, index_t kt_stride,
                             const float* v, index_t v_stride, index_t head_dim, index_t n_keys,
                             const ref::RowMask* masks, MaskFill fill, float* p, float* out, index_t out_stride) {
    index_t r0 = 0;
    if constexpr (!std::is_void_v<PrefixRows>) {
      // (the same key_end in every mask; ends past n_keys that differ go the general way)
      const index_t key_end = n_rows == 0 ? 0 : masks[0].key_end;
      bool same = key_end > 0 && n_keys > 0;
      for (index_t r = 0; same && r < n_rows; ++r) same = masks[r].prefix() && masks[r].key_end == key_end;
      if (same) {
        const index_t e = key_end < n_keys ? key_end : n_keys;
        const float scale = std::sqrt(static_cast<float>(head_dim));
        for (; r0 < n_rows; r0 += kAttentionRowGroup) {
          const index_t nr = n_rows - r0 < kAttentionRowGroup ? n_rows - r0 : kAttentionRowGroup;
          if (!PrefixRows::attention_prefix_rows(q + r0 * q_stride, q_stride, nr, kt, kt_stride, v, v_stride, head_dim,
                                                 e, scale, p, out + r0 * out_stride, out_stride))
            break;
        }
        if (r0 >= n_rows) return;
      }
    }
    if constexpr (kTallRowGroup > kAttentionRowGroup) {
      // (before attention_rows: a tall group skips its set-up)
      for (index_t nt = 0; r0 < n_rows; r0 += nt) {
        if constexpr (!std::is_void_v<LaneBlocks>) {  // a vector of rows over more keys, where it takes them
          nt = LaneBlocks::kRows;
          if (n_rows - r0 >= nt &&
              LaneBlocks::attention_lane_blocks(q + r0 * q_stride, q_stride, nt, kt, kt_stride, v, v_stride, head_dim,
                                                n_keys, masks + r0, out + r0 * out_stride, out_stride))
            continue;
        }
        if constexpr (!std::is_void_v<LaneRows>) {  // up to a vector of rows in lanes, where it takes them
          nt = n_rows - r0 < LaneRows::kMaxRows ? n_rows - r0 : LaneRows::kMaxRows;
          if (LaneRows::takes(nt, head_dim, 1) &&  // (the keys' part of the rule: in the call)
              LaneRows::attention_lane_rows(q + r0 * q_stride, q_stride, nt, kt, kt_stride, v, v_stride, head_dim,
                                            n_keys, masks + r0, out + r0 * out_stride, out_stride))
            continue;
        }
        nt = n_rows - r0 < kTallRowGroup ? n_rows - r0 : kTallRowGroup;
        if (nt <= kAttentionRowGroup ||
            !tall_group(q + r0 * q_stride, q_stride, nt, kt, kt_stride, v, v_stride, head_dim, n_keys, masks + r0,
                        std::sqrt(static_cast<float>(head_dim)), out + r0 * out_stride, out_stride))
          attention_groups(q + r0 * q_stride, q_stride, nt, kt, kt_stride, v, v_stride, head_dim, n_keys, masks + r0,
                           fill, p, out + r0 * out_stride, out_stride);
      }
      return;
    }
    attention_groups(q + r0 * q_stride, q_stride, n_rows - r0, kt, kt_stride, v, v_stride, head_dim, n_keys, masks + r0,
                     fill, p, out + r0 * out_stride, out_stride);
  }

  /// attention_rows for n_heads heads of the same rows (Kernels::attention_rows_heads): where the target's
  /// rows in lanes take the call (AVX-512: LaneRows), the heads through them, two at a time where they
  /// can; else attention_rows head after head.
  static void attention_rows_heads(const float* q, index_t q_stride, index_t n_rows, index_t n_heads, const float* kt,
                                   index_t kt_stride, const float* v, index_t v_stride, index_t head_dim,
                                   index_t n_keys, const ref::RowMask* masks, MaskFill fill, float* p, float* out,
                                   index_t out_stride) {
    if constexpr (!std::is_void_v<LaneRows>) {
      if (LaneRows::takes(n_rows, head_dim, 1) &&
          LaneRows::attention_lane_rows(q, q_stride, n_rows, kt, kt_stride, v, v_stride, head_dim, n_keys, masks, out,
                                        out_stride, n_heads))
        return;
    }
    for (index_t h = 0; h < n_heads; ++h) {
      const index_t off = h * head_dim;
      attention_rows(q + off, q_stride, n_rows, kt + off * kt_stride, kt_stride, v + off, v_stride, head_dim, n_keys,
                     masks, fill, p, out + off, out_stride);
    }
  }

  /// Kernels::attention_lane_rows_heads: the target's rows in lanes over K's rows (key_stride k_stride,
  /// the dimensions contiguous), where it has them and they take the call.
  static bool attention_lane_rows_heads(const float* q, index_t q_stride, index_t n_rows, index_t n_heads,
                                        const float* k, index_t k_stride, const float* v, index_t v_stride,
                                        index_t head_dim, index_t n_keys, const ref::RowMask* masks, bool one_mask,
                                        float* out, index_t out_stride) {
    if constexpr (!std::is_void_v<LaneRows>) {
      return LaneRows::takes(n_rows, head_dim, 1) &&
             LaneRows::attention_lane_rows(q, q_stride, n_rows, k, 1, v, v_stride, head_dim, n_keys, masks, out,
                                           out_stride, n_heads, k_stride, one_mask);
    } else {
      (void)q, (void)q_stride, (void)n_rows, (void)n_heads, (void)k, (void)k_stride, (void)v, (void)v_stride;
      (void)head_dim, (void)n_keys, (void)masks, (void)one_mask, (void)out, (void)out_stride;
      return false;
    }
  }

  /// Streaming attention over groups of rows (see ref::attention_row): per key block, the
  /// group's scores are one register-tiled product with Kᵀ and its values another, accumulated
  /// into the outputs.
  static void attention_groups(const float* q, index_t q_stride, index_t n_rows, const float* kt, index_t kt_stride,
                               const float* v, index_t v_stride, index_t head_dim, index_t n_keys,
                               const ref::RowMask* masks, MaskFill fill, float* p, float* out, index_t out_stride) {
    constexpr index_t B = kAttentionKeyBlock;
    const float scale = std::sqrt(static_cast<float>(head_dim));
    const ScoreScale vscale(scale);
    const index_t bs = n_keys < B ? n_keys : B;  // score row stride
    const index_t g = n_rows < kAttentionRowGroup ? n_rows : kAttentionRowGroup;
    float* qc = p + g * bs;  // copies of the group's queries: the outputs may alias them
    const index_t ps = n_keys < kAttentionScoreKeys ? n_keys : kAttentionScoreKeys;  // (spans' row stride)
    for (index_t r0 = 0; r0 < n_rows; r0 += kAttentionRowGroup) {
      const index_t nr = n_rows - r0 < kAttentionRowGroup ? n_rows - r0 : kAttentionRowGroup;
      const ref::RowMask* mg = masks + r0;
      float* og = out + r0 * out_stride;
      const auto [n_scored, prefixes, every_key] = group_keys(mg, nr, n_keys);
      if constexpr (AttentionSelect<Tag>::wide) {  // (attention/register_block.hpp, wide_spans.hpp)
        if (prefixes && every_key && n_scored <= kRegisterBlockVecs * L) {
          AttentionRegisterBlock<Tag>::template group_block_rows<kAttentionRowGroup>(
              nr, (n_scored + L - 1) / L, q + r0 * q_stride, q_stride, kt, kt_stride, v, v_stride, head_dim, n_scored,
              mg, vscale, og, out_stride);
          continue;
        }
        if (prefixes && every_key) {
          attention_group_spans(q + r0 * q_stride, q_stride, nr, kt, kt_stride, v, v_stride, head_dim, n_scored, mg,
                                vscale, p, ps, p + g * ps, og, out_stride);
          continue;
        }
      }
      // With one key block the queries are read once, by its scores' product, before any output
      // is written (the first block rescales nothing): no copies then, and the outputs are zeroed
      // only where the values' products accumulate into them.
      const bool one_block = n_scored <= B;
      auto zero_outputs = [&] {
        for (index_t r = 0; r < nr; ++r)
          for (index_t d = 0; d < head_dim; ++d) og[r * out_stride + d] = 0.0f;
      };
      if (!one_block) {
        for (index_t r = 0; r < nr; ++r) {
          const float* qr = q + (r0 + r) * q_stride;
          for (index_t d = 0; d < head_dim; ++d) qc[r * head_dim + d] = qr[d];
        }
      }
      if (!one_block || n_scored == 0) zero_outputs();
      bool seen[kAttentionRowGroup] = {};
      float m[kAttentionRowGroup] = {}, l[kAttentionRowGroup] = {};
      for (index_t kb = 0; kb < n_scored; kb += B) {
        const index_t nb = n_scored - kb < B ? n_scored - kb : B;
        if (one_block)
          gemm_plain(q + r0 * q_stride, q_stride, nr, head_dim, kt + kb, kt_stride, nb, p, bs);
        else
          gemm_plain(qc, head_dim, nr, head_dim, kt + kb, kt_stride, nb, p, bs);
        index_t end[kAttentionRowGroup];  // allowed keys of row r in this block: [0, end[r])
        if (AttentionSelect<Tag>::wide && prefixes)
          stream_group_prefix(p, bs, nr, kb, nb, mg, vscale, seen, m, l, og, out_stride, head_dim, end);
        else
          for (index_t r = 0; r < nr; ++r)
            end[r] = stream_block(p + r * bs, kb, nb, mg[r], scale, seen[r], m[r], l[r], og + r * out_stride, head_dim);
        bool every_row = true;  // every row has an allowed key in this block
        for (index_t r = 0; r < nr; ++r) every_row = every_row && end[r];
        const float* vb = v + kb * v_stride;
        if (one_block && prefixes && every_row) {  // from +0, as from zeroed outputs
          weighted_values_prefix(p, bs, nr, end, vb, v_stride, head_dim, og, out_stride, false);
          continue;
        }
        if (one_block) zero_outputs();
        if (prefixes) {
          weighted_values_prefix(p, bs, nr, end, vb, v_stride, head_dim, og, out_stride, true);
        } else {
          for (index_t r = 0; r < nr; ++r) {
            if (!end[r]) continue;
            const ref::RowMask& mask = mg[r];
            weighted_values_acc(
                p + r * bs, vb, v_stride, head_dim, nb, [&](index_t i) { return allowed(mask, kb + i); },
                og + r * out_stride);
          }
        }
      }
      for (index_t r = 0; r < nr; ++r) {
        float* o = og + r * out_stride;
        if (seen[r]) {
          div_map(o, o, head_dim, l[r]);
        } else {  // every key masked: the documented convention
          const float w = fill == MaskFill::neg_1e9 ? 1.0f / static_cast<float>(n_keys) : 0.0f;
          weighted_values_acc(
              &w, v, v_stride, head_dim, n_keys, [&](index_t) { return w != 0.0f; }, o, true);
        }
      }
    }
  }

  /// Turns one row of raw scores into attention weights in place: masked keys -inf, allowed ones
  /// divided by scale, then exp(s - max) (0 for masked), the canonical sum, and the division.
  /// Returns false, leaving the row unnormalized, when every key is masked.
  static bool softmax_scores(float* p, index_t n_keys, const ref::RowMask& mask, float scale) {
    if (mask.prefix()) {  // the allowed keys are the prefix [0, e): the same operations, vectorized
      const index_t e = mask.key_end < n_keys ? mask.key_end : n_keys;
      if (e == 0) {
        for (index_t j = 0; j < n_keys; ++j) p[j] = -INFINITY;
        return false;
      }
      div_map(p, p, e, scale);
      exp_shifted(p, p, e, max_of(p, e));
      for (index_t j = e; j < n_keys; ++j) p[j] = 0.0f;  // exp(-inf - max)
      div_map(p, p, e, sum(p, n_keys));
      return true;
    }
    bool any = false;
    float m = 0.0f;
    const float* add = mask.additive();
    for (index_t j = 0; j < n_keys; ++j) {
      if (!allowed(mask, j)) {
        p[j] = -INFINITY;
        continue;
      }
      p[j] = p[j] / scale;
      if (add) p[j] = p[j] + add[j];
      m = (!any || p[j] > m) ? p[j] : m;
      any = true;
    }
    if (!any) return false;
    exp_shifted(p, p, n_keys, m);
    div_map(p, p, n_keys, sum(p, n_keys));
    return true;
  }

  /// attention_rows with the weights (two passes over whole score rows; row r: q + r·q_stride,
  /// masks[r], weights p + r·n_keys, output out + r·out_stride, which may alias its query row): the
  /// scores of a group of rows are one register-tiled product with Kᵀ, and so are their values.
  static void attention_rows_weights(const float* q, index_t q_stride, index_t n_rows, const float* kt,
                                     index_t kt_stride, const float* v, index_t v_stride, index_t head_dim,
                                     index_t n_keys, const ref::RowMask* masks, MaskFill fill, float* p, float* out,
                                     index_t out_stride) {
    const float scale = std::sqrt(static_cast<float>(head_dim));
    for (index_t r0 = 0; r0 < n_rows; r0 += kAttentionRowGroup) {
      const index_t nr = n_rows - r0 < kAttentionRowGroup ? n_rows - r0 : kAttentionRowGroup;
      float* pg = p + r0 * n_keys;
      // keys at or past every row's key_end are masked for the whole group: no scores needed
      const GroupKeys g = group_keys(masks + r0, nr, n_keys);
      if (g.n_scored) gemm_plain(q + r0 * q_stride, q_stride, nr, head_dim, kt, kt_stride, g.n_scored, pg, n_keys);
      bool all_any = true;
      bool any[kAttentionRowGroup];
      for (index_t r = 0; r < nr; ++r)
        all_any &= any[r] = softmax_scores(pg + r * n_keys, n_keys, masks[r0 + r], scale);
      if (all_any && g.prefixes) {  // every row attends to a non-empty prefix of the keys
        index_t end[kAttentionRowGroup];
        for (index_t r = 0; r < nr; ++r) end[r] = masks[r0 + r].key_end < n_keys ? masks[r0 + r].key_end : n_keys;
        weighted_values_prefix(pg, n_keys, nr, end, v, v_stride, head_dim, out + r0 * out_stride, out_stride, false);
        continue;
      }
      for (index_t r = 0; r < nr; ++r) {
        float* pr = pg + r * n_keys;
        float* o = out + (r0 + r) * out_stride;
        for (index_t d = 0; d < head_dim; ++d) o[d] = 0.0f;
        if (any[r]) {
          const ref::RowMask& mask = masks[r0 + r];
          weighted_values_acc(
              pr, v, v_stride, head_dim, n_keys, [&](index_t j) { return allowed(mask, j); }, o);
        } else {  // every key masked: the documented convention
          const float w = fill == MaskFill::neg_1e9 ? 1.0f / static_cast<float>(n_keys) : 0.0f;
          for (index_t j = 0; j < n_keys; ++j) pr[j] = w;
          weighted_values_acc(
              pr, v, v_stride, head_dim, n_keys, [&](index_t) { return w != 0.0f; }, o);
        }
      }
    }
  }

  static void attention_row(const float* q, const float* kt, index_t kt_stride, const float* v, index_t v_stride,
                            index_t head_dim, index_t n_keys, ref::RowMask mask, MaskFill fill, float* p, float* out) {
    attention_groups(q, head_dim, 1, kt, kt_stride, v, v_stride, head_dim, n_keys, &mask, fill, p, out, head_dim);
  }

  /// The n_heads heads of one query row (a decoding step): head h is attention_row of q + h·head_dim
  /// over Kᵀ's rows from h·head_dim on and the values v + h·head_dim, into out + h·head_dim (out may
  /// alias q). Where each head would be one register block (x86: a prefix mask over at most
  /// kRegisterBlockVecs·L keys), the heads go as the rows of one block, their dependent chains
  /// (products over a short reduction, division, maxima, exp, sums) side by side instead of one
  /// head's after the other's: attention_group_block's operations per row, the same bits.
  static void attention_heads(const float* q, index_t n_heads, const float* kt, index_t kt_stride, const float* v,
                              index_t v_stride, index_t head_dim, index_t n_keys, ref::RowMask mask, MaskFill fill,
                              float* p, float* out) {
    index_t h = 0;
    if constexpr (AttentionSelect<Tag>::wide) {
      const index_t e = mask.key_end < n_keys ? mask.key_end : n_keys;
      const index_t nb = (e + L - 1) / L;
      if (mask.prefix() && e > 0 && nb <= kRegisterBlockVecs) {
        const ScoreScale vscale(std::sqrt(static_cast<float>(head_dim)));
        ref::RowMask mg[kTallRowGroup];
        for (index_t r = 0; r < kTallRowGroup; ++r) mg[r] = mask;
        const bool tall = kTallRowGroup > kAttentionRowGroup && nb == 1 && head_dim <= kTallHeadVecs * L;
        const index_t group = tall ? kTallRowGroup : kAttentionRowGroup;
        while (h < n_heads) {
          const index_t nh = even_part(n_heads - h, group);  // (8 heads as 4 + 4, not 6 + 2)
          const index_t off = h * head_dim;
          if (nh > kAttentionRowGroup)
            AttentionRegisterBlock<Tag>::template group_block_rows<kTallRowGroup, kAttentionRowGroup + 1, true>(
                nh, nb, q + off, head_dim, kt + off * kt_stride, kt_stride, v + off, v_stride, head_dim, e, mg, vscale,
                out + off, head_dim);
          else
            AttentionRegisterBlock<Tag>::template group_block_rows<kAttentionRowGroup, 1, true>(
                nh, nb, q + off, head_dim, kt + off * kt_stride, kt_stride, v + off, v_stride, head_dim, e, mg, vscale,
                out + off, head_dim);
          h += nh;
        }
      }
      if constexpr (kBlockVecs > kRegisterBlockVecs) {
        if (mask.prefix() && e > 0 && nb > kRegisterBlockVecs && nb <= kBlockVecs) {
          wide_head_groups<kBlockVecs>(nb, q, n_heads, kt, kt_stride, v, v_stride, head_dim, e, mask, out);
          return;
        }
      }
      if (mask.prefix() && nb > kBlockVecs && head_dim <= kWideHeadDim) {
        wide_head_spans(q, n_heads, kt, kt_stride, v, v_stride, head_dim, e, mask, out);
        return;
      }
    }
    for (; h < n_heads; ++h) {
      const index_t off = h * head_dim;
      attention_row(q + off, kt + off * kt_stride, kt_stride, v + off, v_stride, head_dim, n_keys, mask, fill, p,
                    out + off);
    }
  }

  /// attention_heads where a head's allowed keys [0, e) take nb score vectors, kRegisterBlockVecs < nb
  /// <= kBlockVecs (AVX2: 17 to 32 keys, a decoding step over up to 32 positions or memory rows): the
  /// heads as the rows of register blocks of NB = nb score vectors, kWideHeadScores / NB heads at a time
  /// (balanced), instead of one head at a time through the spans. Each head reads its own keys once, so
  /// they are the FMAs' memory operands and only the scores take registers. attention_group_block's
  /// operations per row, the same bits. (A query row group over such keys, which shares them, keeps
  /// the spans: such blocks measured no faster in the encoder layer at 25×64×4×128.)
  template <index_t NB>
  [[gnu::noinline]] static void wide_head_groups(index_t nb, const float* q, index_t n_heads, const float* kt,
                                                 index_t kt_stride, const float* v, index_t v_stride, index_t head_dim,
                                                 index_t e, ref::RowMask mask, float* out) {
    if constexpr (NB > kRegisterBlockVecs + 1) {
      if (nb < NB) return wide_head_groups<NB - 1>(nb, q, n_heads, kt, kt_stride, v, v_stride, head_dim, e, mask, out);
    }
    constexpr index_t R = kWideHeadScores / NB;
    const ScoreScale vscale(std::sqrt(static_cast<float>(head_dim)));
    ref::RowMask mg[R];
    for (index_t r = 0; r < R; ++r) mg[r] = mask;
    for (index_t h = 0, nh = 0; h < n_heads; h += nh) {
      nh = even_part(n_heads - h, R);
      const index_t off = h * head_dim;
      wide_head_rows<R, NB>(nh, q + off, kt + off * kt_stride, kt_stride, v + off, v_stride, head_dim, e, mg, vscale,
                            out + off);
    }
  }

  /// Head size up to which wide_head_spans takes the heads (its copies of the queries are on its stack).
  static constexpr index_t kWideHeadDim = 64;

  /// attention_heads where a head's allowed keys [0, e) take more than a key block (over 32 keys, a
  /// decoding step past position 32; AVX2 and AVX-512): up to kAttentionRowGroup heads at a time (balanced)
  /// as the rows of attention_group_spans, each with its own keys (head_scores) and values, their
  /// dependent chains side by side instead of one head's spans after the other's. The operations
  /// per row of attention_group_spans for one row (attention_row's path), the same bits. Its
  /// scores and query copies are on the stack (kAttentionRowGroup rows of at most
  /// kAttentionScoreKeys scores and kWideHeadDim query elements: 4.5 KB), since attention_heads'
  /// scratch is one row's.
  [[gnu::noinline]] static void wide_head_spans(const float* q, index_t n_heads, const float* kt, index_t kt_stride,
                                                const float* v, index_t v_stride, index_t head_dim, index_t e,
                                                ref::RowMask mask, float* out) {
    constexpr index_t G = kAttentionRowGroup;
    alignas(64) float p[G * kAttentionScoreKeys];
    alignas(64) float qc[G * kWideHeadDim];
    const index_t ps = ((e < kAttentionScoreKeys ? e : kAttentionScoreKeys) + L - 1) / L * L;  // (whole vectors)
    const ScoreScale vscale(std::sqrt(static_cast<float>(head_dim)));
    ref::RowMask mg[G];
    for (index_t r = 0; r < G; ++r) mg[r] = mask;
    for (index_t h = 0, nh = 0; h < n_heads; h += nh) {
      nh = even_part(n_heads - h, G);  // (8 heads as 4 + 4)
      const index_t off = h * head_dim;
      AttentionSpans<Tag>::template attention_group_spans<true>(q + off, head_dim, nh, kt + off * kt_stride, kt_stride,
                                                                v + off, v_stride, head_dim, e, mg, vscale, p, ps, qc,
                                                                out + off, head_dim);
    }
  }

  /// wide_head_groups' block for n <= R heads.
  template <index_t R, index_t NB>
  static void wide_head_rows(index_t n, const float* q, const float* kt, index_t kt_stride, const float* v,
                             index_t v_stride, index_t head_dim, index_t e, const ref::RowMask* mg,
                             const ScoreScale& vscale, float* out) {
    if constexpr (R > 1) {
      if (n < R) return wide_head_rows<R - 1, NB>(n, q, kt, kt_stride, v, v_stride, head_dim, e, mg, vscale, out);
    }
    AttentionRegisterBlock<Tag>::template attention_group_block<R, NB, true>(q, head_dim, kt, kt_stride, v, v_stride,
                                                                             head_dim, e, mg, vscale, out, head_dim);
  }
};

}  // namespace stf::kernels_detail::generic
