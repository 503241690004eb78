// The zoo matches torchvision parameter for parameter; shapes and FLOPs follow from the graph.
#include <gtest/gtest.h>

#include "rocebench/common/errors.hpp"
#include "rocebench/models/zoo.hpp"

namespace rocebench::models {
namespace {

TEST(Zoo, ParameterCountsMatchTorchvision) {
  EXPECT_EQ(resnet(50).parameter_count(), 25'557'032);
  EXPECT_EQ(resnet(152).parameter_count(), 60'192'808);
  EXPECT_EQ(vgg16().parameter_count(), 138'357'544);
  EXPECT_EQ(alexnet().parameter_count(), 61'100'840);
  EXPECT_EQ(inception_v3(true).parameter_count(), 27'161'264);   // torchvision's default, aux head on
  EXPECT_EQ(inception_v3(false).parameter_count(), 23'834'568);  // minus the aux head's 3,326,696
}

TEST(Zoo, CifarResNetCountedByHand) {
  // conv1+bn 464; stage 1: 3×(2×(2304+32)); stage 2: 4608+64 + 9216+64 + 512+64 + 2×2×(9216+64);
  // stage 3: 18432+128 + 36864+128 + 2048+128 + 2×2×(36864+128); fc 650.
  EXPECT_EQ(resnet20_cifar().parameter_count(), 464 + 14'016 + 51'648 + 205'696 + 650);
}

TEST(Zoo, OutputShapesOfKnownLayers) {
  const Graph g = inception_v3(false);
  // The last concat before the classifier is Mixed_7c: 2048 channels at 8×8.
  int last_concat = -1;
  for (int i = 0; i < static_cast<int>(g.nodes().size()); ++i)
    if (g.node(i).op == Op::concat) last_concat = i;
  ASSERT_GE(last_concat, 0);
  EXPECT_EQ(g.node(last_concat).out, (Shape{2048, 8, 8}));
  const Graph r = resnet(50);
  int last_add = -1;
  for (int i = 0; i < static_cast<int>(r.nodes().size()); ++i)
    if (r.node(i).op == Op::add) last_add = i;
  EXPECT_EQ(r.node(last_add).out, (Shape{2048, 7, 7}));
}

TEST(Zoo, ForwardFlopsNearPublishedMultiplyAdds) {
  // Published multiply-adds per image (torchvision's model cards, GFLOPS column = GMACs).
  struct Case {
    Graph g;
    double gmacs;
  };
  for (auto& c : std::vector<Case>{{resnet(50), 4.09}, {resnet(152), 11.51}, {vgg16(), 15.47},
                                   {alexnet(), 0.71}, {inception_v3(false), 5.71}}) {
    EXPECT_NEAR(c.g.forward_flops_per_image() / 2e9, c.gmacs, 0.015 * c.gmacs) << c.g.name();
  }
}

TEST(Zoo, UnknownModelListsTheZoo) {
  try {
    build_model("resnet51");
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("resnet50, resnet152, vgg16"), std::string::npos) << e.what();
  }
}

TEST(Graph, ConvGroupsDivideChannels) {
  Graph g("t", {4, 5, 5}, 2);
  EXPECT_THROW(g.conv(g.input(), 6, square(3), 3), std::logic_error);
  const int c = g.conv(g.input(), 6, square(3, 2, 1), 2, true);
  EXPECT_EQ(g.node(c).out, (Shape{6, 3, 3}));
  EXPECT_EQ(g.parameter_count(), 6 * 2 * 9 + 6);
}

}  // namespace
}  // namespace rocebench::models
