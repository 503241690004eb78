// The replay engine: a measured compute timeline played back as waits (engine.hpp).
#include <algorithm>
#include <chrono>
#include <thread>

#include "rocebench/models/engine.hpp"
#include "rocebench/models/timeline.hpp"

namespace rocebench::models {
namespace {

using Clock = std::chrono::steady_clock;

// Sleeps to the end of each interval in turn, measured from the first: a wake-up that comes late
// shortens the next wait, so the sum stays true however coarse the timer.
class Pacer {
 public:
  Pacer() : until_(Clock::now()) {}
  void wait_ms(double ms) {
    until_ += std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double, std::milli>(ms));
    std::this_thread::sleep_until(until_);
  }

 private:
  Clock::time_point until_;
};

class ReplayEngine final : public Engine {
 public:
  ReplayEngine(const Graph& graph, const EngineOptions& options)
      : graph_(graph), options_(options), timeline_(load_timeline(options.timeline, graph)) {
    for (const Param& p : graph.params())
      grads_.emplace_back(static_cast<std::size_t>(p.size()), static_cast<float>(options.seed));
  }

  const Graph& graph() const override { return graph_; }
  const EngineOptions& options() const override { return options_; }
  const Timeline& timeline() const { return timeline_; }

  void set_batch(std::span<const float>, std::span<const int>) override {}
  void forward() override {
    ++forwards_;
    Pacer pacer;
    for (const LayerTime& t : timeline_.nodes) pacer.wait_ms(t.forward_ms);
  }
  void backward(const GradientCallback& ready) override {
    ++backwards_;
    Pacer pacer;
    for (auto t = timeline_.nodes.rbegin(); t != timeline_.nodes.rend(); ++t) {
      // Backward writes each gradient afresh, as an engine does, within the node's time.
      for (int p : graph_.node(t->node).params) std::ranges::fill(grads_[static_cast<std::size_t>(p)], static_cast<float>(options_.seed));
      pacer.wait_ms(t->backward_ms);
      for (int p : graph_.node(t->node).params) {
        auto& g = grads_[static_cast<std::size_t>(p)];
        if (ready) ready({p, g.data(), static_cast<std::int64_t>(g.size()), false});
      }
    }
  }
  void update(const SgdOptions&, double) override {
    ++updates_;
    Pacer().wait_ms(timeline_.update_ms);
  }
  // What it played: the timeline times the passes so far (the update as node -1, as the cpu engine's).
  std::vector<LayerTime> layer_times() const override {
    std::vector<LayerTime> out;
    for (const LayerTime& t : timeline_.nodes) out.push_back({t.node, t.forward_ms * forwards_, t.backward_ms * backwards_});
    out.push_back({-1, 0, timeline_.update_ms * updates_});
    return out;
  }
  void synchronize() override {}
  double loss() override { return 0; }

  std::vector<float> parameter(int index) const override {
    return std::vector<float>(grads_.at(static_cast<std::size_t>(index)).size(), 0.f);
  }
  void set_parameter(int, std::span<const float>) override {}
  std::vector<float> gradient(int index) const override { return grads_.at(static_cast<std::size_t>(index)); }
  std::vector<float> input_gradient() const override { return {}; }
  std::pair<std::vector<float>, std::vector<float>> running_stats(int) const override { return {}; }
  std::int64_t bytes_allocated() const override { return 4 * graph_.parameter_count(); }

 private:
  const Graph& graph_;
  EngineOptions options_;
  Timeline timeline_;
  std::vector<std::vector<float>> grads_;
  int forwards_ = 0, backwards_ = 0, updates_ = 0;  // passes played, for layer_times()
};

}  // namespace

std::unique_ptr<Engine> make_replay_engine(const Graph& graph, const EngineOptions& options) {
  return std::make_unique<ReplayEngine>(graph, options);
}

}  // namespace rocebench::models
