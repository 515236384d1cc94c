// What the Hub import and the local-folder import share: reading config.json and the index,
// counting safetensors tensors per dtype, choosing the exact parameter count, warnings.
// And the local-folder import itself.
#include <algorithm>
#include <cctype>
#include <fstream>
#include <set>
#include <sstream>

#include "hub/hub_internal.hpp"
#include "wingspan/json_input.hpp"
#include "wingspan/safe_file.hpp"

namespace wingspan::hub {

namespace detail {

namespace {

constexpr std::uint64_t kMaxConfigBytes = 64ull << 20;

bool looks_like_html(const std::string& text) {
    std::string start;
    for (char c : text) {
        if (start.size() >= 64) break;
        if (!std::isspace(static_cast<unsigned char>(c)))
            start += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    return start.rfind("<!doctype", 0) == 0 || start.rfind("<html", 0) == 0;
}

nlohmann::json parse_json_file(const std::string& text, const std::string& where) {
    std::string error;
    if (std::optional<nlohmann::json> j = try_parse_untrusted_json(text, &error)) return std::move(*j);
    // json_input.cpp says "not valid JSON (<the parser's words>)", or why it did not parse at all.
    constexpr std::string_view kInvalid = "not valid JSON (";
    if (!error.starts_with(kInvalid))
        throw HubError(HubErrorKind::MalformedJson,
                       where + " is nested deeper than " + std::to_string(kMaxJsonDepth) + " levels; no real one is.");
    const std::string words = without_library_tags(error.substr(kInvalid.size(), error.size() - kInvalid.size() - 1));
    std::string hint = looks_like_html(text)
                           ? " (a web page arrived instead; check HF_ENDPOINT and any proxy)"
                           : "";
    throw HubError(HubErrorKind::MalformedJson, where + " is not valid JSON: " + words + hint + ".");
}

bool is_integer_dtype(const std::string& d) {
    return d == "I8" || d == "U8" || d == "I16" || d == "U16" || d == "I32" || d == "U32" ||
           d == "I64" || d == "U64" || d == "I4" || d == "U4";
}

const std::set<std::string>& known_model_types() {
    // The families Architecture::from_hf_config knows (architecture.cpp).
    static const std::set<std::string> k = {"llama", "mistral", "qwen2",     "qwen3",     "gemma",
                                            "gemma2", "phi3",  "gpt2",     "mixtral",   "qwen2_moe",
                                            "qwen3_moe", "smollm"};
    return k;
}

std::string with_commas(std::int64_t n) {
    const std::string digits = std::to_string(n < 0 ? -n : n);
    std::string out;
    if (n < 0) out.push_back('-');
    for (size_t i = 0; i < digits.size(); ++i) {
        if (i > 0 && (digits.size() - i) % 3 == 0) out.push_back(',');
        out.push_back(digits[i]);
    }
    return out;
}

std::string read_small_file(const std::filesystem::path& p, const std::string& what) {
    std::error_code ec;
    auto size = std::filesystem::file_size(p, ec);
    if (ec)
        throw HubError(HubErrorKind::Filesystem, "Cannot read " + p.string() + ": " + ec.message());
    if (size > kMaxConfigBytes)
        throw HubError(HubErrorKind::TooLarge, what + " (" + p.string() + ") is " +
                                                   std::to_string(size) + " bytes; that is not a " +
                                                   "model config or index.");
    std::ifstream in(p, std::ios::binary);
    if (!in) throw HubError(HubErrorKind::Filesystem, "Cannot open " + p.string() + ".");
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

}  // namespace

std::string plain_message(const std::exception& e) { return without_library_tags(e.what()); }

std::string without_library_tags(std::string w) {
    // Drops nlohmann's "[json.exception.parse_error.101] " tags; keeps the words.
    for (auto at = w.find("[json.exception."); at != std::string::npos; at = w.find("[json.exception.")) {
        auto close = w.find("] ", at);
        if (close == std::string::npos) break;
        w.erase(at, close + 2 - at);
    }
    return w;
}

void read_config(ImportedModel& m, const std::string& config_text, const std::string& where) {
    nlohmann::json j = parse_json_file(config_text, where);
    if (!j.is_object())
        throw HubError(HubErrorKind::MalformedJson,
                       where + " must hold a JSON object (the model's configuration), not " +
                           std::string(j.type_name()) + ".");
    m.config = j;
    m.arch_config = j;
    try {
        m.arch = Architecture::from_hf_config(j);
    } catch (const HubError&) {
        throw;
    } catch (const std::exception& e) {
        // Architecture's messages as a sentence of ours: without "config.json: ", ending in a full stop.
        auto sentence = [](const std::exception& error) {
            std::string why = plain_message(error);
            if (why.rfind("config.json: ", 0) == 0) why = why.substr(13);
            if (!why.empty() && why.back() != '.') why += '.';
            return why;
        };
        std::string text_config_failure;
        // Multimodal models (Llava, Mllama, Gemma 3, ...) keep the language model's config in
        // "text_config": plan that part, with a warning.
        if (j.contains("text_config") && j["text_config"].is_object()) {
            try {
                m.arch = Architecture::from_hf_config(j["text_config"]);
                m.arch_config = j["text_config"];
                m.warnings.push_back(
                    "config.json describes a multimodal model ('" +
                    j.value("model_type", std::string("?")) +
                    "'): only its language model (text_config) is planned; other towers count "
                    "in the checkpoint's parameters only.");
                return;
            } catch (const std::exception& text_config_error) {
                text_config_failure = " Its text_config (the language model) fails too: " + sentence(text_config_error);
            }
        }
        throw HubError(HubErrorKind::UnsupportedConfig,
                       where + ": " + sentence(e) +
                           " Wingspan cannot describe this model's architecture from this config." + text_config_failure);
    }
}

bool safe_relative_file(const std::string& file) {
    if (file.empty() || file.size() > 1024 || file.front() == '/') return false;
    for (char c : file)
        if (static_cast<unsigned char>(c) < 0x20 || c == '\\' || c == ':') return false;
    std::string part;
    std::istringstream in(file);
    while (std::getline(in, part, '/'))
        if (part.empty() || part == "." || part == "..") return false;
    return file.back() != '/';
}

std::vector<std::string> parse_index(const std::string& text, const std::string& where,
                                     nlohmann::json& index_out) {
    nlohmann::json j = parse_json_file(text, where);
    if (!j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object())
        throw HubError(HubErrorKind::MalformedJson,
                       where + " has no \"weight_map\" object (tensor name -> shard file).");
    std::set<std::string> files;
    for (auto it = j["weight_map"].begin(); it != j["weight_map"].end(); ++it) {
        if (!it.value().is_string())
            throw HubError(HubErrorKind::MalformedJson,
                           where + ": weight_map[\"" + it.key() + "\"] must be a file name (a string).");
        std::string f = it.value().get<std::string>();
        if (!safe_relative_file(f))
            throw HubError(HubErrorKind::MalformedJson,
                           where + ": weight_map[\"" + it.key() + "\"] names '" + f +
                               "', which is not a file inside the model.");
        files.insert(f);
    }
    if (files.empty())
        throw HubError(HubErrorKind::MalformedJson, where + ": weight_map lists no tensors.");
    index_out = std::move(j);
    return {files.begin(), files.end()};
}

void finish_import(ImportedModel& m, const std::vector<ReadHeader>& headers,
                   const nlohmann::json* index) {
    m.architecture_parameters = m.arch.parameter_count();
    for (const auto& a : m.arch.assumptions) m.warnings.push_back("config.json: " + a);

    const std::string model_type = m.arch.model_type;
    if (!known_model_types().count(model_type)) {
        bool mentioned = std::any_of(m.arch.assumptions.begin(), m.arch.assumptions.end(),
                                     [&](const std::string& a) { return a.find(model_type) != std::string::npos; });
        if (!mentioned)
            m.warnings.push_back("model_type '" + model_type +
                                 "' is not one of the families Wingspan knows; its config was read "
                                 "best-effort as a standard decoder, so check the numbers.");
    }

    // Count every tensor, per dtype.
    std::map<std::string, std::string> tensor_file;   // name -> file it was found in
    std::vector<std::string> duplicates;
    bool integer_tensors = false;
    m.weight_files.clear();
    m.by_dtype.clear();
    m.checkpoint_parameters = 0;
    m.checkpoint_bytes = 0;
    for (const auto& rh : headers) {
        m.weight_files.push_back(rh.file);
        for (const auto& t : rh.header.tensors) {
            std::int64_t elements = 1;
            for (auto d : t.shape) elements *= d;
            std::uint64_t bytes = t.end >= t.begin ? t.end - t.begin : 0;
            auto& tot = m.by_dtype[t.dtype];
            tot.elements += elements;
            tot.bytes += bytes;
            m.checkpoint_parameters += elements;
            m.checkpoint_bytes += bytes;
            if (is_integer_dtype(t.dtype)) integer_tensors = true;
            if (!tensor_file.emplace(t.name, rh.file).second) duplicates.push_back(t.name);
        }
    }
    m.has_checkpoint = !headers.empty();
    if (!duplicates.empty())
        m.warnings.push_back(std::to_string(duplicates.size()) +
                             " tensor name(s) appear in more than one safetensors file (first: '" +
                             duplicates.front() + "'); each copy was counted.");

    if (index) {
        std::vector<std::string> missing;
        for (auto it = (*index)["weight_map"].begin(); it != (*index)["weight_map"].end(); ++it) {
            auto f = tensor_file.find(it.key());
            if (f == tensor_file.end() || f->second != it.value().get<std::string>())
                missing.push_back(it.key() + " (in " + it.value().get<std::string>() + ")");
        }
        if (!missing.empty())
            m.warnings.push_back(std::to_string(missing.size()) +
                                 " tensor(s) named by model.safetensors.index.json are not in the "
                                 "shard it names, e.g. " + missing.front() + ".");
        if (index->contains("metadata") && (*index)["metadata"].is_object()) {
            const auto& md = (*index)["metadata"];
            if (md.contains("total_size") && md["total_size"].is_number_integer()) {
                auto declared = md["total_size"].get<std::int64_t>();
                if (declared >= 0 && static_cast<std::uint64_t>(declared) != m.checkpoint_bytes)
                    m.warnings.push_back("model.safetensors.index.json declares total_size " +
                                         with_commas(declared) + " bytes, but the shard headers "
                                         "hold " + with_commas(static_cast<std::int64_t>(m.checkpoint_bytes)) +
                                         " bytes of tensors; the headers were used.");
            }
        }
    }

    m.quantized_checkpoint =
        (m.config.is_object() && m.config.contains("quantization_config")) || integer_tensors;

    if (!m.has_checkpoint) {
        m.parameters = m.architecture_parameters;
        m.warnings.push_back("No safetensors weights were found (model.safetensors.index.json or "
                             "*.safetensors); the parameter count (" +
                             with_commas(m.parameters) + ") comes from config.json alone.");
    } else if (m.quantized_checkpoint) {
        m.parameters = m.architecture_parameters;
        std::string method;
        if (m.config.contains("quantization_config") && m.config["quantization_config"].is_object() &&
            m.config["quantization_config"].contains("quant_method") &&
            m.config["quantization_config"]["quant_method"].is_string())
            method = " (" + m.config["quantization_config"]["quant_method"].get<std::string>() + ")";
        m.warnings.push_back("The checkpoint is quantized" + method +
                             ": its tensors hold packed values and scales, so the parameter "
                             "count (" + with_commas(m.parameters) +
                             ") comes from config.json; plans start from 16-bit weights.");
    } else {
        m.parameters = m.checkpoint_parameters;
        if (m.checkpoint_parameters != m.architecture_parameters) {
            std::int64_t diff = m.checkpoint_parameters - m.architecture_parameters;
            m.warnings.push_back(
                "config.json describes " + with_commas(m.architecture_parameters) +
                " parameters, the checkpoint holds " + with_commas(m.checkpoint_parameters) + " (" +
                (diff > 0 ? "+" : "") + with_commas(diff) +
                "). Tensors the architecture does not describe (e.g. a vision tower, an untied "
                "head, extra buffers) are not in the memory plan.");
        }
    }

    m.profile.family = "imported";
    m.profile.arch = m.arch;
}

}  // namespace detail

std::string profile_id_for_folder(const std::filesystem::path& dir) {
    std::filesystem::path p = dir;
    std::string name = p.filename().string();
    if (name.empty() || name == ".") name = p.parent_path().filename().string();
    if (name.empty()) name = "model";
    std::string out = "local-";
    bool dash = false;
    for (char c : name) {
        unsigned char u = static_cast<unsigned char>(c);
        if (std::isalnum(u) || c == '.' || c == '_') {
            out += static_cast<char>(std::tolower(u));
            dash = false;
        } else if (!dash) {
            out += '-';
            dash = true;
        }
    }
    while (out.size() > 6 && out.back() == '-') out.pop_back();
    return out;
}

ImportedModel import_from_folder(const std::filesystem::path& dir_in,
                                 const ProgressCallback& progress, CancelFlag cancel) {
    namespace fs = std::filesystem;
    std::error_code ec;
    fs::path dir = dir_in;
    if (fs::is_regular_file(dir, ec) && dir.filename() == "config.json") dir = dir.parent_path();
    if (!fs::exists(dir, ec))
        throw HubError(HubErrorKind::Filesystem, "The folder '" + dir_in.string() + "' does not exist.");
    if (!fs::is_directory(dir, ec))
        throw HubError(HubErrorKind::Filesystem,
                       "'" + dir_in.string() + "' is not a folder; give the folder that holds "
                       "the model's config.json and .safetensors files.");
    dir = fs::absolute(dir, ec).lexically_normal();
    if (dir.has_filename() == false) dir = dir.parent_path();

    int step = 0, steps = 2;
    auto report = [&](const std::string& msg, const std::string& file) {
        if (!progress) return;
        Progress p;
        p.message = msg;
        p.file = file;
        p.step = step;
        p.steps = steps;
        progress(p);
    };
    auto check_cancel = [&] {
        if (cancel && cancel->load()) throw HubError(HubErrorKind::Cancelled, "Import cancelled.");
    };

    ImportedModel m;
    m.source = "folder";
    m.folder = dir;

    const fs::path config = dir / "config.json";
    if (!fs::is_regular_file(config, ec))
        throw HubError(HubErrorKind::NotFound,
                       "No config.json in '" + dir.string() + "'. Wingspan needs the model's "
                       "Hugging Face config.json (and its .safetensors files) in that folder.");
    report("Reading config.json", "config.json");
    detail::read_config(m, detail::read_small_file(config, "config.json"), config.string());
    ++step;

    std::vector<std::string> files;
    nlohmann::json index;
    bool has_index = false;
    const fs::path index_path = dir / "model.safetensors.index.json";
    if (fs::is_regular_file(index_path, ec)) {
        files = detail::parse_index(detail::read_small_file(index_path, "model.safetensors.index.json"),
                                    index_path.string(), index);
        has_index = true;
        for (const auto& f : files)
            if (!fs::is_regular_file(dir / f, ec))
                throw HubError(HubErrorKind::NotFound,
                               "'" + f + "', named by " + index_path.string() +
                                   ", is missing from the folder.");
    } else if (fs::is_regular_file(dir / "model.safetensors", ec)) {
        files.push_back("model.safetensors");
    } else {
        for (const auto& e : fs::directory_iterator(dir, ec))
            if (e.is_regular_file() && e.path().extension() == ".safetensors")
                files.push_back(e.path().filename().string());
        std::sort(files.begin(), files.end());
    }
    steps = 1 + static_cast<int>(files.size());

    std::vector<detail::ReadHeader> headers;
    for (const auto& f : files) {
        check_cancel();
        report("Reading the header of " + f, f);
        const fs::path p = dir / f;
        // Check the length prefix against the file size first, for a clear message.
        std::uint64_t size = fs::file_size(p, ec);
        if (ec) throw HubError(HubErrorKind::Filesystem, "Cannot read " + p.string() + ": " + ec.message());
        unsigned char prefix[8] = {0};
        {
            std::ifstream in(p, std::ios::binary);
            if (!in) throw HubError(HubErrorKind::Filesystem, "Cannot open " + p.string() + ".");
            in.read(reinterpret_cast<char*>(prefix), 8);
            if (in.gcount() != 8)
                throw HubError(HubErrorKind::BadSafetensors,
                               p.string() + " is only " + std::to_string(size) +
                                   " bytes long: not a safetensors file.");
        }
        std::uint64_t n = 0;
        try {
            n = safetensors::parse_header_length(prefix);
        } catch (const std::exception& e) {
            throw HubError(HubErrorKind::BadSafetensors,
                           "The safetensors header of " + p.string() + " lies about its size: " + detail::plain_message(e));
        }
        if (n > size - 8)
            throw HubError(HubErrorKind::BadSafetensors,
                           "The safetensors header of " + p.string() + " claims to be " +
                               std::to_string(n) + " bytes long, but the whole file is only " +
                               std::to_string(size) + " bytes: the file is damaged or not safetensors.");
        try {
            headers.push_back({f, safetensors::read_header(p)});
        } catch (const std::exception& e) {
            throw HubError(HubErrorKind::BadSafetensors,
                           "The safetensors header of " + p.string() + " is not valid: " + detail::plain_message(e));
        }
        ++step;
    }
    check_cancel();
    detail::finish_import(m, headers, has_index ? &index : nullptr);
    m.profile.id = profile_id_for_folder(dir);
    m.profile.name = dir.filename().string();
    if (m.config.contains("_name_or_path") && m.config["_name_or_path"].is_string()) {
        // Kept only when it looks like a Hub id (owner/name), never a local path.
        const std::string& n = m.config["_name_or_path"].get_ref<const std::string&>();
        if (n.find('/') != std::string::npos && n.front() != '/' && n.front() != '.')
            m.profile.hf_repo = detail::parse_repo_id(n, {}).value_or("");
    }
    report("Done", "");
    return m;
}

namespace {

// What an import found, as both to_json and the saved profile's "import" object hold it.
nlohmann::json import_facts(const ImportedModel& m) {
    nlohmann::json by = nlohmann::json::object();
    for (const auto& [dtype, t] : m.by_dtype)
        by[dtype] = {{"elements", t.elements}, {"bytes", t.bytes}};
    nlohmann::json j = {
        {"source", m.source},
        {"parameters", m.parameters},
        {"checkpoint_parameters", m.checkpoint_parameters},
        {"architecture_parameters", m.architecture_parameters},
        {"checkpoint_bytes", m.checkpoint_bytes},
        {"by_dtype", by},
        {"quantized_checkpoint", m.quantized_checkpoint},
        {"weight_files", m.weight_files},
        {"warnings", m.warnings},
    };
    if (m.source == "hub") {
        j["repo_id"] = m.repo_id;
        j["revision"] = m.revision;
        j["endpoint"] = m.endpoint;
    }
    if (!m.folder.empty()) j["folder"] = m.folder.string();
    return j;
}

}  // namespace

nlohmann::json ImportedModel::to_json() const {
    nlohmann::json j = import_facts(*this);
    j["id"] = profile.id;
    j["name"] = profile.name;
    j["family"] = profile.family;
    j["has_checkpoint"] = has_checkpoint;
    j["used_cache"] = used_cache;
    j["config"] = config;
    if (!profile.hf_repo.empty()) j["hf_repo"] = profile.hf_repo;
    return j;
}

nlohmann::json ImportedModel::profile_json() const {
    nlohmann::json imp = import_facts(*this);
    imp["imported_at"] = detail::utc_now_iso8601();
    nlohmann::json j = {{"id", profile.id},
                        {"name", profile.name},
                        {"family", profile.family},
                        {"config", arch_config.is_object() ? arch_config : config},
                        {"import", imp}};
    if (!profile.hf_repo.empty()) j["hf_repo"] = profile.hf_repo;
    return j;
}

std::filesystem::path save_imported_profile(const ImportedModel& model,
                                            const std::filesystem::path& user_dir) {
    namespace fs = std::filesystem;
    if (model.profile.id.empty())
        throw HubError(HubErrorKind::Filesystem, "The imported model has no profile id to save it under.");
    const fs::path dir = user_dir / "models";
    const fs::path path = dir / (detail::escape_component(model.profile.id) + ".json");
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec)
        throw HubError(HubErrorKind::Filesystem,
                       "Cannot create " + dir.string() + " to remember the model: " + ec.message());
    try {
        write_file_atomically(path, model.profile_json().dump(2) + "\n");
    } catch (const IoError& e) {
        throw HubError(HubErrorKind::Filesystem, std::string(e.what()) + ".");
    }
    return path;
}

}  // namespace wingspan::hub
