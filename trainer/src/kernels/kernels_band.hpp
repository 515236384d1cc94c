#pragma once
// Attention's products over the causal band only (issue 35).
//
// Why: causal row t attends to keys [0, t], so half of every score matrix is masked. Eager
// attention computed QKᵀ, P·V and the four backward products over the whole [g·T, Tk] square
// and threw the masked half away: 3 % of a 135M-class step's FLOPs at T = 256, run at a third
// less than the linears' GEMM rate. Here a block of g·T rows (g query heads per key head, row r
// at position r mod T) is cut into chunks of `chunk` positions, and chunk i's products run over
// the keys [0, limit[i]) only: 62.5 % of the square at T = 256 in chunks of 64.
//
// What keeps it exact: the probabilities and the scores' gradient are zero outside each row's
// finite mask span (masked_softmax writes them so), so a product that reads them skips zeros
// only. A product that makes scores, or the probabilities' gradient, leaves the entries at and
// past limit[i] unwritten; masked_softmax reads each row's span only. Nothing is allocated: the
// tensors are those bmm_out would fill, in the same order, so the measured bytes do not change.
#include <ATen/ATen.h>

#include <cstdint>
#include <optional>
#include <vector>

namespace wingspan::train::kernels {

// Where row t of an additive mask [T, Tk] is finite: [lo, hi). A row masked everywhere keeps
// its whole width ([0, Tk)), so its softmax comes out NaN as libtorch's.
struct Span {
    std::int64_t lo = 0, hi = 0;
};

// The spans of a contiguous CPU mask [T, Tk] in fp32 or bf16.
std::vector<Span> finite_spans(const at::Tensor& mask);

struct Band {
    std::int64_t T = 0;       // positions per block of rows
    std::int64_t keys = 0;    // Tk
    std::int64_t chunk = 0;   // positions per chunk (the last may be shorter)
    std::vector<std::int64_t> limit;   // per chunk: its rows are zero from this column on

    std::int64_t chunks() const { return static_cast<std::int64_t>(limit.size()); }
    // Positions [first, end) of chunk i.
    std::int64_t first(std::int64_t i) const { return i * chunk; }
    std::int64_t end(std::int64_t i) const { return std::min(T, (i + 1) * chunk); }
};

// The band of these spans (T = spans.size(), Tk = keys), or nullopt where the blocks would skip
// less than a tenth of the square (short sequences, a mask without a causal shape).
std::optional<Band> band_of(const std::vector<Span>& spans, std::int64_t keys);

// Which matrix of the product is the banded [R, Tk] one (R = g·T rows):
enum class BandedMatrix {
    Out,     // out [.., R, Tk] = a [.., R, K] @ b [.., K, Tk]           (QKᵀ; the probabilities' gradient)
    Left,    // out [.., R, N] = a [.., R, Tk] @ b [.., Tk, N], a banded  (P·V; the queries' gradient)
    LeftT,   // out [.., Tk, N] = a [.., Tk, R] @ b [.., R, N], aᵀ banded (the values' gradient)
    Right,   // out [.., M, Tk] = a [.., M, R] @ b [.., R, Tk], b banded  (the keys' gradient, transposed)
};

// bmm_out's product (requires handles_batched) computed over the band only. A bf16 output is
// rounded once, as bmm_out rounds it, also where a LeftT or Right key chunk sums several row runs.
void banded_bmm_out(at::Tensor& out, const at::Tensor& a, const at::Tensor& b, const Band& band, BandedMatrix which);

}  // namespace wingspan::train::kernels
