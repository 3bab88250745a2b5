// hetero_runtime, and the calls behind hetero_object and hetero_task.
#include "roam/hetero/hetero_runtime.hpp"
#include <roam/base/detail/enum_names.hpp>

#include <roam/base/settings.hpp>

#include <atomic>
#include <cstdlib>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "backends.hpp"
#include "hetero_engine.hpp"

namespace roam {
namespace {

std::atomic<hetero_runtime*> current_runtime{nullptr};
std::mutex current_mutex;
std::shared_ptr<detail::hetero_engine> current_engine;

std::shared_ptr<detail::hetero_engine> engine_or_throw() {
  std::lock_guard lock(current_mutex);
  if (!current_engine) {
    throw device_error("no hetero_runtime is alive; create one before hetero objects and tasks");
  }
  return current_engine;
}

using setting_values::choice;
using setting_values::whole;
constexpr std::uint64_t any_unsigned = std::numeric_limits<unsigned>::max();

std::vector<setting<hetero_options>> hetero_settings() {
  return {
      {"hetero-backends", "ROAM_HETERO_BACKENDS", "host,opencl,cuda",
       "the heterogeneous framework's backends, a comma-separated list (default: all built)", false,
       [](hetero_options& o, std::string_view v, const std::string&) { o.backends = v; }},
      {"hetero-memory-limit", "ROAM_HETERO_MEMORY_LIMIT", "bytes",
       "cap on the memory the framework uses per device (default 0: the device's memory)", false,
       [](hetero_options& o, std::string_view v, const std::string& origin) {
         o.memory_limit = whole(v, origin, 0, std::numeric_limits<std::size_t>::max());
       }},
      {"hetero-host-threads", "ROAM_HETERO_HOST_THREADS", "n",
       "threads of the host backend (default 0: hardware threads)", false,
       [](hetero_options& o, std::string_view v, const std::string& origin) {
         o.host_threads = static_cast<unsigned>(whole(v, origin, 0, any_unsigned));
       }},
      {"hetero-host-memory", "ROAM_HETERO_HOST_MEMORY", "shared|separate",
       "the host backend computes on host memory (shared, default) or copies like a discrete "
       "device (separate)",
       false,
       [](hetero_options& o, std::string_view v, const std::string& origin) {
         o.host_separate_memory = choice(v, origin, {"shared", "separate"}) == 1;
       }},
      {"hetero-queues", "ROAM_HETERO_QUEUES", "n", "compute queues per device (default 2)", false,
       [](hetero_options& o, std::string_view v, const std::string& origin) {
         o.compute_queues = static_cast<unsigned>(whole(v, origin, 1, any_unsigned));
       }},
      {"hetero-dispatch", "ROAM_HETERO_DISPATCH", "callers|engine",
       "who runs the engine's work: the threads that submit and complete (callers, default), or "
       "only the engine thread",
       false,
       [](hetero_options& o, std::string_view v, const std::string& origin) {
         o.dispatch_on_callers = choice(v, origin, {"callers", "engine"}) == 0;
       }},
  };
}

// Linking the framework registers its settings, so that --roam-help lists them.
[[maybe_unused]] const detail::settings_group& registered = hetero_options::registration();

void* only_hetero_settings(void* options, const detail::settings_group& group) {
  return &group == &hetero_options::registration() ? options : nullptr;
}

}  // namespace

const char* to_string(coherence c) noexcept {
  static constexpr const char* names[] = {"invalid", "shared", "modified"};
  return detail::enum_name(c, names);
}

const detail::settings_group& hetero_options::registration() {
  static const detail::settings_group& group = register_settings<hetero_options>(
      "heterogeneous framework (roam::hetero_options)", 80, hetero_settings());
  return group;
}

hetero_options hetero_options::from_environment() {
  if (const layer_settings* job = detail::job_settings())
    if (const void* given = job->find(registration()))
      return *static_cast<const hetero_options*>(given);
  hetero_options options;
  (void)registration();  // registered even when called during static initialization
  try {
    detail::apply_environment(only_hetero_settings, &options);
  } catch (const config_error& e) {
    // The framework used on its own reports every failure as a device_error.
    throw device_error(errc::config, e.message());
  }
  return options;
}

hetero_runtime::hetero_runtime(const hetero_options& options) {
  hetero_runtime* expected = nullptr;
  if (!current_runtime.compare_exchange_strong(expected, this)) {
    throw device_error("a hetero_runtime is already alive in this process");
  }
  try {
    engine_ = std::make_shared<detail::hetero_engine>(options);
    engine_->start();
  } catch (...) {
    current_runtime.store(nullptr);
    throw;
  }
  for (const auto& d : engine_->devices()) device_view_.push_back(d.get());
  std::lock_guard lock(current_mutex);
  current_engine = engine_;
}

hetero_runtime::~hetero_runtime() {
  engine_->shut_down();
  engine_->stop();
  {
    std::lock_guard lock(current_mutex);
    current_engine.reset();
  }
  current_runtime.store(nullptr);
}

hetero_runtime& hetero_runtime::current() {
  auto* runtime = current_runtime.load();
  if (runtime == nullptr) {
    throw device_error("no hetero_runtime is alive; create one first");
  }
  return *runtime;
}

std::span<device* const> hetero_runtime::devices() const noexcept { return device_view_; }

void hetero_runtime::wait_all() { engine_->wait_all(); }

hetero_statistics hetero_runtime::statistics() const { return engine_->statistics(); }

namespace detail {

std::shared_ptr<hetero_object_state> make_hetero_object(std::size_t bytes) {
  if (bytes == 0) throw device_error("a hetero_object needs at least one element");
  return std::make_shared<hetero_object_state>(engine_or_throw(), bytes);
}

void* host_data(const hetero_object_state& object) noexcept { return object.host; }
std::size_t object_bytes(const hetero_object_state& object) noexcept { return object.bytes; }

hetero_future<void*> request_host_access(const std::shared_ptr<hetero_object_state>& object,
                                         data_access access) {
  if (!object) throw device_error("request() on an empty hetero_object");
  return object->engine->request_host(object, access, false);
}

void release_host_access(hetero_object_state& object) { object.engine->release_host(object); }

void check_range(std::size_t size, std::size_t first, std::size_t count, bool write) {
  if (first > size || count > size - first) {
    throw std::out_of_range(std::string("roam: hetero_object::") +
                            (write ? "write_range" : "read_range") + "() of elements [" +
                            std::to_string(first) + ", " + std::to_string(first + count) +
                            ") of an object of " + std::to_string(size) + " elements");
  }
}

device_event copy_range(const std::shared_ptr<hetero_object_state>& object,
                        std::size_t element_size, std::size_t size, bool write, std::size_t first,
                        std::size_t count, void* data, std::shared_ptr<void> owner) {
  const char* what = write ? "write_range" : "read_range";
  if (!object) throw device_error(std::string(what) + "() on an empty hetero_object");
  check_range(size, first, count, write);
  if (count == 0) return device_event::completed();
  return object->engine->copy_range(object, write, first * element_size, count * element_size, data,
                                    std::move(owner));
}

device_event tasks_done(const hetero_object_state& object) {
  return object.engine->tasks_done(object);
}

device_event evict_everywhere(const std::shared_ptr<hetero_object_state>& object) {
  if (!object) throw device_error("remove_from_devices() on an empty hetero_object");
  return object->engine->request_host(object, data_access::read_write, true).event();
}

coherence copy_state(const hetero_object_state& object, int device) noexcept {
  const auto& engine = *object.engine;
  if (device < 0 || device >= static_cast<int>(engine.devices().size())) return coherence::invalid;
  return engine.state_in(object, engine.space_of(device));
}

coherence host_state(const hetero_object_state& object) noexcept {
  return object.engine->state_in(object, 0);
}

std::shared_ptr<hetero_task_state> make_hetero_task(const kernel& k, const launch_dims& dims) {
  auto engine = engine_or_throw();
  if (dims.group_count() == 0 || dims.local_count() == 0) {
    throw device_error(std::string("kernel '") + (k.name != nullptr ? k.name : "?") +
                       "' launched with a zero dimension");
  }
  kernel_launch launch;
  launch.function = &k;
  launch.dims = dims;
  return engine->new_task(std::move(launch));
}

namespace {
// The phase is the engine's once the task is submitted (its thread moves it on): read it
// under the engine's lock.
void check_building(const hetero_task_state& task, const char* what) {
  if (task.engine->submitted(task)) {
    throw device_error(std::string("hetero_task::") + what + " after submit()");
  }
}
}  // namespace

void add_object_argument(hetero_task_state& task, object_argument argument) {
  check_building(task, "argument");
  if (argument.object->engine != task.engine) {
    throw device_error("a hetero_object of another hetero_runtime given to a task");
  }
  task_argument a;
  a.object = std::move(argument.object);
  a.access = argument.access;
  a.value.is_buffer = true;  // what the launch passes; check_launch compares its element size
  a.value.element_bytes = argument.element_bytes;
  task.arguments.push_back(std::move(a));
}

void add_value_argument(hetero_task_state& task, const kernel_argument& value) {
  check_building(task, "argument");
  task_argument a;
  a.value = value;
  task.arguments.push_back(std::move(a));
}

void set_local_memory(hetero_task_state& task, std::size_t bytes) {
  check_building(task, "local_memory");
  task.as_kernel()->local_bytes = bytes;
}

void set_target(hetero_task_state& task, device_type type, std::optional<roam::backend> on_backend,
                int device_index) {
  check_building(task, "on");
  auto& launch = *task.as_kernel();
  launch.target = type;
  launch.target_backend = on_backend;
  launch.target_device = device_index;
}

void set_implicit_dependencies(hetero_task_state& task, bool enabled) {
  check_building(task, "implicit_dependencies");
  task.implicit = enabled;
}

void add_task_dependency(hetero_task_state& task, const std::shared_ptr<hetero_task_state>& on) {
  check_building(task, "add_dependency");
  // A dependency not yet submitted might never be, leaving `task` waiting for ever, and two
  // tasks naming each other would wait for each other (and keep each other alive): requiring
  // it submitted first rules both out.
  if (!on || !on->engine->submitted(*on)) {
    throw device_error(
        "hetero_task::add_dependency(other): submit `other` first (a task may only wait "
        "for one already submitted)");
  }
  task.dependencies.push_back(on);
}

void submit_task(const std::shared_ptr<hetero_task_state>& task) {
  // A second submit() is refused by the engine; only the first one's arguments are checked.
  if (!task->engine->submitted(*task)) {
    std::vector<kernel_argument> arguments;
    arguments.reserve(task->arguments.size());
    for (const auto& a : task->arguments) arguments.push_back(a.value);
    const auto& launch = *task->as_kernel();
    check_launch(*launch.function, launch.dims, arguments);
  }
  task->engine->submit(task);
}

void wait_task(hetero_task_state& task) {
  if (task.id == 0) throw device_error("hetero_task::wait() on a task never submitted");
  try {
    device_event(task.finished).wait();  // through the wait hook: a handler's fiber suspends
  } catch (...) {
    // wait_all() need not report it. (A wait_all() on another thread that looks before this
    // store may report it too: the failure is then reported twice, never lost.)
    if (task.failure_seen) task.failure_seen->store(true, std::memory_order_release);
    throw;
  }
}

bool task_done(const hetero_task_state& task) noexcept {
  return task.finished->done.load(std::memory_order_acquire);
}

int task_device(const hetero_task_state& task) noexcept { return task.device.load(); }

}  // namespace detail
}  // namespace roam
