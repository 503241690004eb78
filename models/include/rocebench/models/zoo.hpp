#pragma once
// The model zoo, built from the layer graph to match torchvision's definitions parameter for
// parameter, plus a CIFAR-size ResNet for CPU runs.
#include <functional>
#include <string>
#include <vector>

#include "rocebench/models/graph.hpp"

namespace rocebench::models {

struct ZooEntry {
  std::string name;
  std::string description;
  std::function<Graph()> build;
};

// Every model, in the order `rocebench train --list` prints them.
const std::vector<ZooEntry>& zoo();
// Throws InputError listing the models that exist.
Graph build_model(const std::string& name);

Graph resnet(int depth);                 // 50 or 152, 224×224, 1000 classes (torchvision v1.5)
Graph vgg16();                           // 224×224, 1000 classes
Graph alexnet();                         // 224×224, 1000 classes
Graph inception_v3(bool aux_logits);     // 299×299, 1000 classes; aux head weighs 0.4 in the loss
Graph resnet20_cifar();                  // 32×32, 10 classes; 1×1 projection shortcuts (option B)

}  // namespace rocebench::models
