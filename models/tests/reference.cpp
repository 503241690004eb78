#include "reference.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "rocebench/models/engine.hpp"

namespace rocebench::models::testing {
namespace {

using Tensor = std::vector<double>;

struct Eval {
  const Graph& g;
  const std::vector<std::vector<double>>& params;
  const ReferenceBatch& in;
  std::vector<Tensor> out;

  const Tensor& x(const Node& n, std::size_t k = 0) const { return out[static_cast<std::size_t>(n.inputs[k])]; }
  const Shape& in_shape(const Node& n, std::size_t k = 0) const { return g.node(n.inputs[k]).out; }
  const std::vector<double>& param(const Node& n, std::size_t k) const {
    return params[static_cast<std::size_t>(n.params[k])];
  }

  Tensor conv(const Node& n) const {
    const Shape s = in_shape(n), o = n.out;
    const Window& w = n.window;
    const int icg = s.c / n.groups, ocg = o.c / n.groups;
    const auto& wt = param(n, 0);
    Tensor y(static_cast<std::size_t>(in.batch * o.size()));
    for (int b = 0; b < in.batch; ++b)
      for (int oc = 0; oc < o.c; ++oc)
        for (int oh = 0; oh < o.h; ++oh)
          for (int ow = 0; ow < o.w; ++ow) {
            double sum = n.params.size() > 1 ? param(n, 1)[static_cast<std::size_t>(oc)] : 0.0;
            const int group = oc / ocg;
            for (int ic = 0; ic < icg; ++ic)
              for (int kh = 0; kh < w.kh; ++kh)
                for (int kw = 0; kw < w.kw; ++kw) {
                  const int ih = oh * w.sh - w.ph + kh, iw = ow * w.sw - w.pw + kw;
                  if (ih < 0 || ih >= s.h || iw < 0 || iw >= s.w) continue;
                  sum += x(n)[static_cast<std::size_t>(((b * s.c + group * icg + ic) * s.h + ih) * s.w + iw)] *
                         wt[static_cast<std::size_t>(((oc * icg + ic) * w.kh + kh) * w.kw + kw)];
                }
            y[static_cast<std::size_t>(((b * o.c + oc) * o.h + oh) * o.w + ow)] = sum;
          }
    return y;
  }

  Tensor batch_norm(const Node& n) const {
    const Shape s = n.out;
    const int hw = s.h * s.w;
    Tensor y(x(n).size());
    for (int c = 0; c < s.c; ++c) {
      double mean = 0, var = 0;
      auto at = [&](int b, int k) { return static_cast<std::size_t>((b * s.c + c) * hw + k); };
      for (int b = 0; b < in.batch; ++b)
        for (int k = 0; k < hw; ++k) mean += x(n)[at(b, k)];
      mean /= in.batch * hw;
      for (int b = 0; b < in.batch; ++b)
        for (int k = 0; k < hw; ++k) var += (x(n)[at(b, k)] - mean) * (x(n)[at(b, k)] - mean);
      var /= in.batch * hw;
      const double inv = 1 / std::sqrt(var + n.eps);
      for (int b = 0; b < in.batch; ++b)
        for (int k = 0; k < hw; ++k)
          y[at(b, k)] = (x(n)[at(b, k)] - mean) * inv * param(n, 0)[static_cast<std::size_t>(c)] +
                        param(n, 1)[static_cast<std::size_t>(c)];
    }
    return y;
  }

  Tensor pool(const Node& n, bool max) const {
    const Shape s = in_shape(n), o = n.out;
    const Window& w = n.window;
    Tensor y(static_cast<std::size_t>(in.batch * o.size()));
    for (int bc = 0; bc < in.batch * o.c; ++bc)
      for (int oh = 0; oh < o.h; ++oh)
        for (int ow = 0; ow < o.w; ++ow) {
          double acc = max ? -std::numeric_limits<double>::infinity() : 0.0;
          for (int kh = 0; kh < w.kh; ++kh)
            for (int kw = 0; kw < w.kw; ++kw) {
              const int ih = oh * w.sh - w.ph + kh, iw = ow * w.sw - w.pw + kw;
              if (ih < 0 || ih >= s.h || iw < 0 || iw >= s.w) continue;
              const double v = x(n)[static_cast<std::size_t>((bc * s.h + ih) * s.w + iw)];
              acc = max ? std::max(acc, v) : acc + v;
            }
          y[static_cast<std::size_t>((bc * o.h + oh) * o.w + ow)] = max ? acc : acc / (w.kh * w.kw);
        }
    return y;
  }

  Tensor linear(const Node& n) const {
    const auto k = static_cast<std::size_t>(in_shape(n).size());
    const auto o = static_cast<std::size_t>(n.out.c);
    Tensor y(static_cast<std::size_t>(in.batch) * o);
    for (std::size_t b = 0; b < static_cast<std::size_t>(in.batch); ++b)
      for (std::size_t j = 0; j < o; ++j) {
        double sum = n.params.size() > 1 ? param(n, 1)[j] : 0.0;
        for (std::size_t i = 0; i < k; ++i) sum += param(n, 0)[j * k + i] * x(n)[b * k + i];
        y[b * o + j] = sum;
      }
    return y;
  }

  Tensor concat(const Node& n) const {
    Tensor y;
    for (int b = 0; b < in.batch; ++b)
      for (std::size_t k = 0; k < n.inputs.size(); ++k) {
        const auto size = in_shape(n, k).size();
        const auto first = x(n, k).begin() + b * size;
        y.insert(y.end(), first, first + size);
      }
    return y;
  }

  double softmax_ce(const Node& n) const {
    const auto k = static_cast<std::size_t>(g.classes());
    double total = 0;
    for (std::size_t b = 0; b < static_cast<std::size_t>(in.batch); ++b) {
      const double* z = x(n).data() + b * k;
      const double top = *std::max_element(z, z + k);
      double sum = 0;
      for (std::size_t c = 0; c < k; ++c) sum += std::exp(z[c] - top);
      total += std::log(sum) + top - z[static_cast<std::size_t>(in.labels[b])];
    }
    return n.loss_weight * total / in.batch;
  }
};

}  // namespace

double reference_loss(const Graph& g, const std::vector<std::vector<double>>& params, const ReferenceBatch& in) {
  Eval e{g, params, in, {}};
  double loss = 0;
  for (int i = 0; i < static_cast<int>(g.nodes().size()); ++i) {
    const Node& n = g.node(i);
    Tensor y;
    switch (n.op) {
      case Op::input: y = in.images; break;
      case Op::conv: y = e.conv(n); break;
      case Op::batch_norm: y = e.batch_norm(n); break;
      case Op::relu:
        y = e.x(n);
        for (auto& v : y) v = std::max(v, 0.0);
        break;
      case Op::max_pool: y = e.pool(n, true); break;
      case Op::avg_pool:
      case Op::global_avg_pool: y = e.pool(n, false); break;
      case Op::add:
        y = e.x(n, 0);
        for (std::size_t k = 0; k < y.size(); ++k) y[k] += e.x(n, 1)[k];
        break;
      case Op::concat: y = e.concat(n); break;
      case Op::linear: y = e.linear(n); break;
      case Op::dropout:
        y = e.x(n);
        for (std::size_t k = 0; k < y.size(); ++k)
          y[k] = dropout_keeps(in.seed, in.pass, i, static_cast<std::int64_t>(k), n.p) ? y[k] / (1 - n.p) : 0.0;
        break;
      case Op::softmax_ce: loss += e.softmax_ce(n); break;
    }
    e.out.push_back(std::move(y));
  }
  return loss;
}

}  // namespace rocebench::models::testing
