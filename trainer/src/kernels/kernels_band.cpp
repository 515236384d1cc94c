#include "kernels/kernels_band.hpp"

#include <ATen/Parallel.h>

#include <algorithm>
#include <limits>
#include <stdexcept>

#include "kernels/kernels_gemm.hpp"
#include "kernels/kernels_row_math.hpp"
#include "support/profile_scopes.hpp"

namespace wingspan::train::kernels {

namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// Chunks of at least 64 positions, at most 8 per block, 16-aligned. At T = 256 chunks of 32 (56 %
// of the square) measured the same as 64 (62.5 %): the smaller products run further below the
// gemm's rate, and 64 makes half the calls.
constexpr std::int64_t kMinChunk = 64, kMostChunks = 8;

template <typename M>
std::vector<Span> spans_of(const M* m, std::int64_t T, std::int64_t n) {
    std::vector<Span> spans(static_cast<size_t>(T));
    for (std::int64_t t = 0; t < T; ++t) {
        const M* row = m + t * n;
        std::int64_t lo = 0, hi = n;
        while (lo < n && row_math::ld(row + lo) == kNegInf) ++lo;
        while (hi > lo && row_math::ld(row + hi - 1) == kNegInf) --hi;
        spans[t] = lo < hi ? Span{lo, hi} : Span{0, n};
    }
    return spans;
}

// A run of consecutive row chunks [i0, i1) of one block whose rows reach a key chunk.
struct Run {
    std::int64_t row0, rows;   // rows of the [R, Tk] matrix
};

// The runs of block p's chunks that have nonzero entries in columns from `key0` on.
void runs_reaching(const Band& band, std::int64_t p, std::int64_t key0, std::vector<Run>& runs) {
    std::int64_t i = 0;
    while (i < band.chunks()) {
        if (band.limit[i] <= key0) {
            ++i;
            continue;
        }
        const std::int64_t i0 = i;
        while (i < band.chunks() && band.limit[i] > key0) ++i;
        runs.push_back({p * band.T + band.first(i0), band.end(i - 1) - band.first(i0)});
    }
}

// One slice of a LeftT or Right product: for each key chunk, the sum over the row runs that reach
// it. left_t: out [Tk, N] = aᵀ-banded [Tk, R] @ b [R, N]; else out [M, Tk] = a [M, R] @ b-banded.
// A bf16 sum of several runs (grouped heads) is taken in an fp32 tile and rounded once, as
// bmm_out rounds each output.
void key_chunks(at::ScalarType dt, const GemmOperand& a, const GemmOperand& b, char* c, std::int64_t ldc,
                std::int64_t item, std::int64_t other, std::int64_t rows, const Band& band, bool left_t) {
    std::vector<Run> runs;
    thread_local std::vector<float> sum;
    for (std::int64_t j0 = 0; j0 < band.keys; j0 += band.chunk) {
        const std::int64_t w = std::min(band.chunk, band.keys - j0);
        char* cj = left_t ? c + j0 * ldc * item : c + j0 * item;
        const std::int64_t M = left_t ? w : other, N = left_t ? other : w;
        runs.clear();
        for (std::int64_t p = 0; p < rows / band.T; ++p) runs_reaching(band, p, j0, runs);
        const bool rounded_once = dt != at::kFloat && runs.size() > 1;
        if (rounded_once) sum.resize(static_cast<size_t>(M * N));
        if (runs.empty()) gemm_on_this_thread(dt, a, b, cj, ldc, M, N, 0, false);   // no row reaches: zeros
        for (size_t k = 0; k < runs.size(); ++k) {
            const Run& r = runs[k];
            const GemmOperand ak = left_t ? a.at(j0, r.row0) : a.at(0, r.row0);
            const GemmOperand bk = left_t ? b.at(r.row0, 0) : b.at(r.row0, j0);
            if (rounded_once) bf16_gemm_fp32_out_on_this_thread(ak, bk, sum.data(), N, M, N, r.rows, k > 0);
            else gemm_on_this_thread(dt, ak, bk, cj, ldc, M, N, r.rows, k > 0);
        }
        if (rounded_once)
            for (std::int64_t i = 0; i < M; ++i)
                row_math::narrow(sum.data() + i * N, reinterpret_cast<std::uint16_t*>(cj + i * ldc * item), N);
    }
}

// One slice of an Out or Left product: each chunk of each block over its keys [0, limit).
void row_chunks(at::ScalarType dt, const GemmOperand& a, const GemmOperand& b, char* c, std::int64_t ldc,
                std::int64_t item, std::int64_t inner, std::int64_t n, std::int64_t rows, const Band& band, bool out) {
    for (std::int64_t p = 0; p < rows / band.T; ++p) {
        for (std::int64_t i = 0; i < band.chunks(); ++i) {
            const std::int64_t r0 = p * band.T + band.first(i), m = band.end(i) - band.first(i);
            const std::int64_t L = band.limit[i];
            char* ci = c + r0 * ldc * item;
            if (out) gemm_on_this_thread(dt, a.at(r0, 0), b, ci, ldc, m, L, inner, false);
            else gemm_on_this_thread(dt, a.at(r0, 0), b, ci, ldc, m, n, L, false);
        }
    }
}

}  // namespace

std::vector<Span> finite_spans(const at::Tensor& mask) {
    const std::int64_t T = mask.size(0), n = mask.size(1);
    if (mask.scalar_type() == at::kFloat) return spans_of(mask.data_ptr<float>(), T, n);
    return spans_of(reinterpret_cast<const std::uint16_t*>(mask.data_ptr<c10::BFloat16>()), T, n);
}

std::optional<Band> band_of(const std::vector<Span>& spans, std::int64_t keys) {
    const auto T = static_cast<std::int64_t>(spans.size());
    Band band;
    band.T = T;
    band.keys = keys;
    band.chunk = std::max(kMinChunk, ((T + kMostChunks - 1) / kMostChunks + 15) / 16 * 16);
    if (T < 2 * band.chunk) return std::nullopt;
    double kept = 0;
    for (std::int64_t i = 0; band.first(i) < T; ++i) {
        std::int64_t limit = 0;
        for (std::int64_t t = band.first(i); t < band.end(i); ++t) limit = std::max(limit, spans[t].hi);
        band.limit.push_back(limit);
        kept += static_cast<double>(limit) * static_cast<double>(band.end(i) - band.first(i));
    }
    if (kept > 0.9 * static_cast<double>(T) * static_cast<double>(keys)) return std::nullopt;
    return band;
}

void banded_bmm_out(at::Tensor& out, const at::Tensor& a, const at::Tensor& b, const Band& band, BandedMatrix which) {
    WINGSPAN_PROFILE_SCOPE(profile::kGemmBatched);
    const std::int64_t d = out.dim(), n = out.size(d - 1), m = out.size(d - 2);
    if (out.numel() == 0) return;
    const std::int64_t batch = out.numel() / (m * n);
    const at::ScalarType dt = a.scalar_type();
    const std::int64_t item = static_cast<std::int64_t>(out.element_size());
    // R, the banded matrix's rows, and its columns (the keys), by where it sits in the product.
    const std::int64_t rows = which == BandedMatrix::Out || which == BandedMatrix::Left ? m
                              : which == BandedMatrix::LeftT                             ? a.size(-1)
                                                                                         : b.size(-2);
    const std::int64_t keys = which == BandedMatrix::Out     ? n
                              : which == BandedMatrix::Left  ? a.size(-1)
                              : which == BandedMatrix::LeftT ? m
                                                             : n;
    if (rows % band.T != 0 || keys != band.keys)
        throw std::invalid_argument("banded_bmm_out: the product's shape does not match the band");
    at::parallel_for(0, batch, 1, [&](std::int64_t i0, std::int64_t i1) {
        for (std::int64_t i = i0; i < i1; ++i) {
            const GemmOperand ga = gemm_operand(a, i), gb = gemm_operand(b, i);
            char* c = static_cast<char*>(out.data_ptr()) + i * m * n * item;
            switch (which) {
                case BandedMatrix::Out: row_chunks(dt, ga, gb, c, n, item, a.size(-1), n, rows, band, true); break;
                case BandedMatrix::Left: row_chunks(dt, ga, gb, c, n, item, 0, n, rows, band, false); break;
                case BandedMatrix::LeftT: key_chunks(dt, ga, gb, c, n, item, n, rows, band, true); break;
                case BandedMatrix::Right: key_chunks(dt, ga, gb, c, n, item, m, rows, band, false); break;
            }
        }
    });
}

}  // namespace wingspan::train::kernels
