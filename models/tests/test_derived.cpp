// Derived timelines (issue #42): a model's per-layer FLOPs and bytes on a named device's ratings, as
// a roofline; what `rocebench predict` plays for a model with no measured timeline, and never in
// place of a measured one.
#include <gtest/gtest.h>

#include <algorithm>

#include "rocebench/common/errors.hpp"
#include "rocebench/models/derived.hpp"
#include "rocebench/models/predict.hpp"
#include "rocebench/models/zoo.hpp"

namespace rocebench::models {
namespace {

std::string flag_of(const std::string& key) { return predict_options().at(key).flag; }

TEST(DerivedTimeline, GradientsAreTheModelsParameters) {
  for (const ZooEntry& entry : zoo()) {
    const Graph g = entry.build();
    const DerivedTimeline d = derive_timeline(g, device_named("h100", "--device"), 8);
    ASSERT_EQ(d.layers.size() + 1, g.nodes().size()) << entry.name;
    std::int64_t total = 0;
    for (const DerivedLayer& l : d.layers) {
      std::int64_t own = 0;  // the node's own parameter tensors, counted here from their dims
      for (int p : g.node(l.node).params) {
        std::int64_t size = 1;
        for (std::int64_t dim : g.params()[static_cast<std::size_t>(p)].dims) size *= dim;
        own += size;
      }
      EXPECT_EQ(l.gradient_params, own) << entry.name << " node " << l.node;
      total += l.gradient_params;
    }
    EXPECT_EQ(total, g.parameter_count()) << entry.name;
  }
  // And torchvision's counts (test_zoo.cpp holds the rest).
  EXPECT_EQ(resnet(50).parameter_count(), 25'557'032);
}

TEST(DerivedTimeline, FlopsAreTheModelsPublishedFlopsThreeTimesOver) {
  // Published multiply-adds of one 224x224 image (torchvision's model cards): ResNet-50 4.09 G, VGG16 15.47 G.
  for (const auto& [name, gmacs] : std::vector<std::pair<std::string, double>>{{"resnet50", 4.09}, {"vgg16", 15.47}}) {
    const Graph g = build_model(name);
    const int batch = 16;
    const DerivedTimeline d = derive_timeline(g, device_named("h200", "--device"), batch);
    double forward = 0, backward = 0;
    for (const DerivedLayer& l : d.layers) forward += l.forward_flops, backward += l.backward_flops;
    EXPECT_NEAR(forward / batch / 2e9, gmacs, 0.015 * gmacs) << name;
    EXPECT_NEAR((forward + backward) / batch / 2e9, 3 * gmacs, 3 * 0.015 * gmacs) << name;
  }
}

TEST(DerivedTimeline, EachNodeTakesTheSlowerOfItsComputeAndItsMemory) {
  const Device& h100 = device_named("h100", "--device");
  const Graph g = vgg16();
  const DerivedTimeline d = derive_timeline(g, h100, 32);
  const double flops_per_ms = h100.peak_tflops * 1e9 * h100.compute_efficiency;
  const double bytes_per_ms = h100.memory_GBps * 1e6 * h100.memory_efficiency;
  bool compute_bound = false, memory_bound = false;
  for (std::size_t k = 0; k < d.layers.size(); ++k) {
    const DerivedLayer& l = d.layers[k];
    const LayerTime& t = d.timeline.nodes[k];
    EXPECT_EQ(t.node, l.node);
    EXPECT_DOUBLE_EQ(t.forward_ms, std::max(l.forward_flops / flops_per_ms, l.forward_bytes / bytes_per_ms));
    EXPECT_DOUBLE_EQ(t.backward_ms, std::max(l.backward_flops / flops_per_ms, l.backward_bytes / bytes_per_ms));
    const Op op = g.node(l.node).op;
    if (op == Op::conv && l.forward_flops / flops_per_ms > l.forward_bytes / bytes_per_ms) compute_bound = true;
    if (op == Op::relu) {
      EXPECT_EQ(l.forward_flops, 0);
      EXPECT_GT(t.forward_ms, 0);
      memory_bound = true;
    }
  }
  EXPECT_TRUE(compute_bound && memory_bound);
  // The update: 20 bytes a parameter (fp32 weight, gradient and momentum read; weight and momentum written).
  EXPECT_DOUBLE_EQ(d.timeline.update_ms, 20.0 * static_cast<double>(g.parameter_count()) / bytes_per_ms);
  EXPECT_EQ(d.timeline.source["kind"], "derived");
  EXPECT_EQ(d.timeline.source["device"], "h100");
  EXPECT_EQ(d.timeline.source["batch"], 32);
  EXPECT_FALSE(d.timeline.source["rated_source"].get<std::string>().empty());
  EXPECT_FALSE(d.timeline.source["efficiency_source"].get<std::string>().empty());
}

TEST(DerivedTimeline, EveryDeviceNamesItsSources) {
  for (const Device& d : devices()) {
    EXPECT_GT(d.peak_tflops, 0) << d.name;
    EXPECT_GT(d.memory_GBps, 0) << d.name;
    EXPECT_GT(d.compute_efficiency, 0) << d.name;
    EXPECT_LE(d.compute_efficiency, 1) << d.name;
    EXPECT_GT(d.memory_efficiency, 0) << d.name;
    EXPECT_LE(d.memory_efficiency, 1) << d.name;
    EXPECT_FALSE(d.rated_source.empty()) << d.name;
    EXPECT_FALSE(d.efficiency_source.empty()) << d.name;
  }
}

TEST(PredictDerived, AModelWithNoMeasuredTimelineIsPredictedFromADerivedOne) {
  const PredictInputs in =
      predict_inputs({{"model", "vgg16"}, {"device", "h100"}, {"batch", 32}, {"fabric", "25g-roce"}, {"world_sizes", {1, 16}}}, flag_of);
  EXPECT_EQ(in.timeline_name, "derived-h100");
  EXPECT_EQ(in.compute.label, "derived for h100 (bf16) as derived");
  EXPECT_EQ(in.compute.batch, 32);
  EXPECT_NE(in.timeline_note.find("derived from vgg16's per-layer FLOPs and bytes for h100"), std::string::npos)
      << in.timeline_note;
  const Timeline expected = derive_timeline(vgg16(), device_named("h100", "--device"), 32).timeline;
  EXPECT_DOUBLE_EQ(in.compute.timeline.forward_ms(), expected.forward_ms());
  const std::vector<ResultRecord> records = predict_records(in);
  ASSERT_FALSE(records.empty());
  for (const ResultRecord& r : records) {
    EXPECT_EQ(r.params["timeline"], "derived-h100");
    EXPECT_EQ(r.samples["predicted_from"]["timeline_source"]["kind"], "derived");
    EXPECT_EQ(r.samples["predicted_from"]["timeline_source"]["device"], "h100");
  }
  // Scaled as a measured one is, to another device's measured speed.
  const PredictInputs scaled = predict_inputs(
      {{"model", "vgg16"}, {"device", "h100"}, {"batch", 32}, {"images_per_s", 500}, {"fabric", "25g-roce"}}, flag_of);
  EXPECT_EQ(scaled.compute.label, "derived for h100 (bf16) scaled to 500 images/s");
  const Timeline& t = scaled.compute.timeline;
  EXPECT_NEAR(t.forward_ms() + t.backward_ms() + t.update_ms, 1e3 * 32 / 500, 1e-9);
}

TEST(PredictDerived, AMeasuredTimelineWinsOverADerivedOne) {
  // resnet50 has a shipped timeline: --device does not replace it, it only gives its speed.
  const PredictInputs in =
      predict_inputs({{"model", "resnet50"}, {"device", "h100"}, {"batch", 32}, {"fabric", "25g-roce"}}, flag_of);
  EXPECT_EQ(in.timeline_name, "cpu-resnet50-fp32-b2");
  EXPECT_EQ(in.compute.timeline.source["kind"], "measured");
  EXPECT_NE(in.timeline_note.find("measured cpu-resnet50-fp32-b2 (shipped; a measured timeline wins over one derived for h100)"),
            std::string::npos)
      << in.timeline_note;
  const Timeline derived = derive_timeline(resnet(50), device_named("h100", "--device"), 32).timeline;
  const double derived_ms = derived.forward_ms() + derived.backward_ms() + derived.update_ms;
  const Timeline& t = in.compute.timeline;
  EXPECT_NEAR(t.forward_ms() + t.backward_ms() + t.update_ms, derived_ms, 1e-9 * derived_ms);
  EXPECT_EQ(in.compute.label.rfind("cpu-resnet50-fp32-b2 scaled to h100's derived ", 0), 0u) << in.compute.label;
  // Given by name, and with its own rate, the measured timeline is as it was.
  const PredictInputs given = predict_inputs(
      {{"model", "resnet50"}, {"timeline", "cpu-resnet50-fp32-b2"}, {"device", "h100"}, {"batch", 32}, {"images_per_s", 219},
       {"fabric", "25g-roce"}},
      flag_of);
  EXPECT_EQ(given.compute.label, "cpu-resnet50-fp32-b2 scaled to 219 images/s at batch 32");
  const ResultRecord r = predict_records(given).front();
  EXPECT_EQ(r.samples["predicted_from"]["timeline_source"]["kind"], "measured");
}

std::string error_of(const json& params) {
  try {
    predict_inputs(params, flag_of);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(accepted)";
}

TEST(PredictDerived, BadInputNamesTheFlag) {
  EXPECT_EQ(error_of({{"model", "vgg16"}, {"device", "h900"}, {"batch", 32}, {"fabric", "25g-roce"}}),
            "--device: unknown device 'h900' (one of h100, h200, a100, p100, epyc-9654)");
  EXPECT_EQ(error_of({{"model", "vgg16"}, {"fabric", "25g-roce"}}),
            "--timeline or --device is required: no measured timeline of vgg16 is shipped (cpu-resnet20_cifar-fp32-b16, "
            "cpu-resnet20_cifar-fp32-b64, cpu-resnet50-fp32-b2 are)");
  EXPECT_EQ(error_of({{"model", "vgg16"}, {"device", "h100"}, {"fabric", "25g-roce"}}),
            "--batch: a timeline derived for h100 needs the batch a rank trains");
}

}  // namespace
}  // namespace rocebench::models
