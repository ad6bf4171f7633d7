// The registry client's memory of images: two LRU tables, times given.
#include "registry/image_cache.h"

#include <algorithm>
#include <utility>

namespace cudagate {

ImageCache::ImageCache(std::size_t max_entries, std::chrono::seconds ttl) {
  configure(max_entries, ttl);
}

void ImageCache::configure(std::size_t max_entries, std::chrono::seconds ttl) {
  bound_ = std::max<std::size_t>(1, max_entries);
  ttl_ = ttl;
  trim();
}

ImageCache::Answer ImageCache::find(const std::string& key, TimePoint now) {
  Answer answer;
  const auto it = images_.find(key);
  if (it == images_.end()) return answer;
  Image& image = it->second;
  images_lru_.splice(images_lru_.begin(), images_lru_, image.lru);
  const bool fresh = now < image.fresh_until;
  answer.ask_again = !fresh;
  if (image.config) {
    answer.result = fresh ? Answer::Result::hit : Answer::Result::stale;
    answer.config = image.config;
  } else {
    answer.result = Answer::Result::failure;
    answer.failure = image.failure;
  }
  return answer;
}

bool ImageCache::fresh(const std::string& key, TimePoint now) const {
  const auto it = images_.find(key);
  return it != images_.end() && now < it->second.fresh_until;
}

void ImageCache::found(const std::string& key, const ConfigPtr& config, bool by_digest,
                       TimePoint now, bool scans_looked_for, std::string manifest_digest) {
  if (!config->digest.empty()) {
    const auto it = configs_.find(config->digest);
    if (it != configs_.end()) {
      configs_lru_.splice(configs_lru_.begin(), configs_lru_, it->second.lru);
    } else {
      configs_lru_.push_front(config->digest);
      configs_.emplace(config->digest, Config{config, configs_lru_.begin()});
      trim();
    }
  }
  // What a digest names never changes, but a scan may be attached to it later.
  const bool for_good = by_digest && (config->scan != nullptr || !scans_looked_for);
  store(key, config, "", for_good ? TimePoint::max() : now + ttl_);
  images_.find(key)->second.manifest_digest = std::move(manifest_digest);
}

std::size_t ImageCache::attach_scan(const std::string& manifest_digest,
                                    const std::shared_ptr<const ScanFacts>& scan) {
  std::size_t changed = 0;
  if (manifest_digest.empty() || scan == nullptr) return changed;
  for (auto& [key, image] : images_) {
    if (image.manifest_digest != manifest_digest || image.config == nullptr ||
        image.config->scan != nullptr) {
      continue;
    }
    auto copy = std::make_shared<ImageConfig>(*image.config);
    copy->scan = scan;
    image.config = std::move(copy);
    ++changed;
  }
  return changed;
}

void ImageCache::failed(const std::string& key, std::string why, std::chrono::seconds at_least,
                        TimePoint now) {
  store(key, nullptr, std::move(why), now + std::max(kFailureTtl, at_least));
}

ImageCache::ConfigPtr ImageCache::config(const std::string& digest) {
  const auto it = configs_.find(digest);
  if (it == configs_.end()) return nullptr;
  configs_lru_.splice(configs_lru_.begin(), configs_lru_, it->second.lru);
  return it->second.config;
}

void ImageCache::store(const std::string& key, ConfigPtr config, std::string failure,
                       TimePoint fresh_until) {
  auto it = images_.find(key);
  if (it == images_.end()) {
    images_lru_.push_front(key);
    it = images_.emplace(key, Image{}).first;
    it->second.lru = images_lru_.begin();
  } else {
    images_lru_.splice(images_lru_.begin(), images_lru_, it->second.lru);
  }
  Image& image = it->second;
  // A failure keeps the config given before; only its time moves on.
  if (config != nullptr || image.config == nullptr) {
    image.config = std::move(config);
    image.failure = std::move(failure);
  }
  image.fresh_until = fresh_until;
  trim();
}

void ImageCache::trim() {
  while (images_.size() > bound_) {
    images_.erase(images_lru_.back());
    images_lru_.pop_back();
  }
  while (configs_.size() > bound_) {
    configs_.erase(configs_lru_.back());
    configs_lru_.pop_back();
  }
}

std::string_view to_string(ImageCache::Answer::Result result) {
  switch (result) {
    case ImageCache::Answer::Result::hit:
      return "hit";
    case ImageCache::Answer::Result::stale:
      return "stale";
    case ImageCache::Answer::Result::failure:
      return "failure";
    case ImageCache::Answer::Result::miss:
      return "miss";
  }
  return "miss";
}

}  // namespace cudagate
