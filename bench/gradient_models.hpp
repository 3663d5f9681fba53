// Gradient sets shaped like real models' parameters, for arlab-bench --gradients: the element
// count of every parameter tensor, in the order the model registers them.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace arlab::bench {

struct GradientModel {
  std::string name;                 // "resnet50", "bert-base"
  std::string description;          // where the shapes come from
  std::vector<std::size_t> counts;  // per tensor, registration order
};

// torchvision's resnet50: 161 tensors (53 convolutions, 53 batch norms' weight and bias, the
// classifier's weight and bias), 25,557,032 parameters.
GradientModel resnet50();
// Hugging Face's BertModel, bert-base-uncased: 199 tensors (embeddings, 12 encoder layers of
// 16 tensors, the pooler), 109,482,240 parameters.
GradientModel bert_base();

// By name ("resnet50", "bert-base"); empty counts for an unknown one.
GradientModel gradient_model(const std::string& name);

}  // namespace arlab::bench
