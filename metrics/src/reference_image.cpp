// Registry entries of the image metrics (image.h).
#include "distmetrics/metrics/image.h"
#include "reference_metrics.h"

namespace distmetrics::metrics::detail {

void register_image(MetricRegistry& registry) {
  registry.add({"PSNR", "image",
                "mean over images of 10 log10(data_range^2 / MSE_image); input and target float images [N,*]",
                {param("data_range", "float", nullptr, "the value range of the images (1.0 for [0,1], 255 for 8-bit), > 0"),
                 sum_dtype_param()},
                [](const nlohmann::json& p) {
                  return std::make_unique<PSNR>(p.at("data_range").get<double>(), sum_dtype_of("PSNR", p));
                }});
}

}  // namespace distmetrics::metrics::detail
