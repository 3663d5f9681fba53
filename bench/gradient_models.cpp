#include "gradient_models.hpp"

namespace arlab::bench {

GradientModel resnet50() {
  GradientModel m{"resnet50", "torchvision resnet50 (bottleneck blocks 3, 4, 6, 3; widths 64..512, expansion 4)", {}};
  auto conv = [&](std::size_t out, std::size_t in, std::size_t k) { m.counts.push_back(out * in * k * k); };
  auto bn = [&](std::size_t c) {
    m.counts.push_back(c);  // weight
    m.counts.push_back(c);  // bias
  };
  conv(64, 3, 7);
  bn(64);
  std::size_t in = 64;
  const std::size_t blocks[] = {3, 4, 6, 3}, widths[] = {64, 128, 256, 512};
  for (int layer = 0; layer < 4; ++layer) {
    const std::size_t w = widths[layer];
    for (std::size_t b = 0; b < blocks[layer]; ++b) {
      conv(w, in, 1);
      bn(w);
      conv(w, w, 3);
      bn(w);
      conv(4 * w, w, 1);
      bn(4 * w);
      if (b == 0) {  // the downsample path of the first block
        conv(4 * w, in, 1);
        bn(4 * w);
      }
      in = 4 * w;
    }
  }
  m.counts.push_back(1000 * 2048);  // fc.weight
  m.counts.push_back(1000);         // fc.bias
  return m;
}

GradientModel bert_base() {
  GradientModel m{"bert-base", "Hugging Face BertModel, bert-base-uncased (hidden 768, 12 layers, FFN 3072, vocabulary 30522)", {}};
  const std::size_t h = 768, ffn = 3072;
  auto linear = [&](std::size_t out, std::size_t in) {
    m.counts.push_back(out * in);
    m.counts.push_back(out);
  };
  auto layer_norm = [&] {
    m.counts.push_back(h);
    m.counts.push_back(h);
  };
  m.counts.push_back(30522 * h);  // word embeddings
  m.counts.push_back(512 * h);    // position embeddings
  m.counts.push_back(2 * h);      // token type embeddings
  layer_norm();
  for (int layer = 0; layer < 12; ++layer) {
    linear(h, h);  // query
    linear(h, h);  // key
    linear(h, h);  // value
    linear(h, h);  // attention output
    layer_norm();
    linear(ffn, h);  // intermediate
    linear(h, ffn);  // output
    layer_norm();
  }
  linear(h, h);  // pooler
  return m;
}

GradientModel gradient_model(const std::string& name) {
  if (name == "resnet50") return resnet50();
  if (name == "bert-base") return bert_base();
  return {name, "", {}};
}

}  // namespace arlab::bench
