// The Hub client's transport: libcurl, redirects, limits and errors (the option defaults from the
// environment are in hub_environment.cpp).
#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <ctime>
#include <iomanip>
#include <locale>
#include <mutex>
#include <sstream>

#include "hub/hub_internal.hpp"
#include "wingspan/version.hpp"

namespace wingspan::hub {

namespace detail {

std::string trim(const std::string& s) {
    size_t a = 0, b = s.size();
    while (a < b && std::isspace(static_cast<unsigned char>(s[a]))) ++a;
    while (b > a && std::isspace(static_cast<unsigned char>(s[b - 1]))) --b;
    return s.substr(a, b - a);
}

std::string percent_encode(const std::string& s, bool keep_slash) {
    static const char* hex = "0123456789ABCDEF";
    std::string out;
    for (unsigned char c : s) {
        if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' ||
            (keep_slash && c == '/')) {
            out += static_cast<char>(c);
        } else {
            out += '%';
            out += hex[c >> 4];
            out += hex[c & 15];
        }
    }
    return out;
}

std::string ByteRange::header_value() const {
    return "bytes=" + std::to_string(first) + "-" + std::to_string(last);
}

namespace {

struct CurlUrl {
    CURLU* h = curl_url();
    ~CurlUrl() { curl_url_cleanup(h); }
    std::string part(CURLUPart p, unsigned flags = 0) const {
        char* v = nullptr;
        if (curl_url_get(h, p, &v, flags) != CURLUE_OK || !v) return {};
        std::string s(v);
        curl_free(v);
        return s;
    }
};

std::string lower(std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

}  // namespace

std::string url_origin(const std::string& url) {
    CurlUrl u;
    if (!u.h || curl_url_set(u.h, CURLUPART_URL, url.c_str(), 0) != CURLUE_OK) return {};
    std::string scheme = lower(u.part(CURLUPART_SCHEME));
    std::string host = lower(u.part(CURLUPART_HOST));
    std::string port = u.part(CURLUPART_PORT, CURLU_DEFAULT_PORT);
    if (scheme.empty() || host.empty()) return {};
    return scheme + "://" + host + ":" + port;
}

std::string url_host(const std::string& url) {
    CurlUrl u;
    if (!u.h || curl_url_set(u.h, CURLUPART_URL, url.c_str(), 0) != CURLUE_OK) return url;
    std::string host = u.part(CURLUPART_HOST);
    std::string port = u.part(CURLUPART_PORT);
    return port.empty() ? host : host + ":" + port;
}

namespace {

std::once_flag g_curl_init;

constexpr std::uint64_t kErrorBodyCap = 64 * 1024;     // kept from 4xx/5xx answers
constexpr std::uint64_t kHeaderBytesCap = 256 * 1024;  // all response headers of one hop

struct Transfer {
    std::string body;
    std::map<std::string, std::string> headers;
    long status = 0;
    std::uint64_t header_bytes = 0;
    std::uint64_t limit = 0;
    std::optional<std::uint64_t> want;   // range length asked for
    std::uint64_t skip = 0;              // range start: bytes to drop if the server sends 200
    bool oversize = false;
    bool enough = false;                 // server ignored Range: we stopped after `want` bytes
    CancelFlag cancel = nullptr;
    const HttpClient::BodySink* sink = nullptr;   // streaming: 2xx bytes go here, not to body
    bool sink_stopped = false;
    std::uint64_t sink_limit = 0;   // streaming: the most bytes the sink takes
    std::uint64_t sink_got = 0;
    bool overlong = false;          // the server sent more than sink_limit
};

// The most bytes a streamed answer may deliver: the caller's limit, or the server's own
// Content-Length when that is smaller (less the bytes skipped of an ignored Range).
std::uint64_t sink_limit(const Transfer* t) {
    std::uint64_t limit = t->sink_limit;
    auto it = t->headers.find("content-length");
    if (it == t->headers.end()) return limit;
    const std::string& v = it->second;
    if (v.empty() || v.size() > 19 || v.find_first_not_of("0123456789") != std::string::npos) return limit;
    const std::uint64_t stated = std::stoull(v);
    const std::uint64_t skip_left = t->status == 200 ? t->skip : 0;
    return std::min(limit, stated > skip_left ? stated - skip_left : 0);
}

size_t on_header(char* data, size_t size, size_t n, void* user) {
    auto* t = static_cast<Transfer*>(user);
    size_t len = size * n;
    t->header_bytes += len;
    if (t->header_bytes > kHeaderBytesCap) {
        t->oversize = true;
        return 0;
    }
    std::string line(data, len);
    while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
    if (line.rfind("HTTP/", 0) == 0) {   // a new response (redirect hop, 100-continue, proxy)
        t->headers.clear();
        std::istringstream in(line);
        std::string proto;
        in >> proto >> t->status;
        return len;
    }
    auto colon = line.find(':');
    if (colon != std::string::npos) {
        t->headers[lower(trim(line.substr(0, colon)))] = trim(line.substr(colon + 1));
    }
    return len;
}

// A server that ignored Range answers 200 with the whole file: drop the bytes before the
// range's start.
void drop_ignored_range_prefix(Transfer* t, char*& data, size_t& len) {
    if (t->status != 200 || t->skip == 0) return;
    size_t drop = static_cast<size_t>(std::min<std::uint64_t>(len, t->skip));
    t->skip -= drop;
    data += drop;
    len -= drop;
}

size_t on_body(char* data, size_t size, size_t n, void* user) {
    auto* t = static_cast<Transfer*>(user);
    size_t len = size * n;
    if (t->status >= 300 || t->status < 200) {   // error answers: keep the start only
        if (t->body.size() < kErrorBodyCap)
            t->body.append(data, std::min<size_t>(len, kErrorBodyCap - t->body.size()));
        return len;
    }
    if (t->sink) {   // streaming (downloads): the same Range rules, bytes to the sink
        const size_t whole = len;
        drop_ignored_range_prefix(t, data, len);
        const std::uint64_t room = sink_limit(t) - std::min(sink_limit(t), t->sink_got);
        const bool over = len > room;
        if (over) len = static_cast<size_t>(room);
        t->sink_got += len;
        if (len > 0 && !(*t->sink)(data, len)) {
            t->sink_stopped = true;
            return 0;
        }
        if (over) {
            t->overlong = true;
            return 0;
        }
        return whole;
    }
    if (t->want) {   // a range request: never keep more than asked for
        const size_t whole = len;
        drop_ignored_range_prefix(t, data, len);
        if (len == 0) return whole;
        std::uint64_t room = *t->want > t->body.size() ? *t->want - t->body.size() : 0;
        if (len > room) {
            // More bytes than the range holds (the server ignored Range): keep what was
            // asked for and stop the transfer.
            t->body.append(data, static_cast<size_t>(room));
            t->enough = true;
            return 0;
        }
        t->body.append(data, len);
        if (t->body.size() > t->limit) {
            t->oversize = true;
            return 0;
        }
        return whole;
    }
    if (t->body.size() + len > t->limit) {
        t->oversize = true;
        return 0;
    }
    t->body.append(data, len);
    return len;
}

int on_progress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
    auto* t = static_cast<Transfer*>(user);
    return (t->cancel && t->cancel->load()) ? 1 : 0;
}

std::string seconds_text(std::chrono::milliseconds ms) {
    std::ostringstream o;
    double s = ms.count() / 1000.0;
    o << s << (s == 1.0 ? " second" : " seconds");
    return o.str();
}

[[noreturn]] void throw_transport(CURLcode code, const char* errbuf, const std::string& url,
                                  const std::string& what, const HubOptions& opt,
                                  bool connected) {
    std::string host = url_host(url);
    std::string detail = (errbuf && *errbuf) ? std::string(errbuf) : curl_easy_strerror(code);
    switch (code) {
        case CURLE_COULDNT_CONNECT:
            throw HubError(HubErrorKind::Offline,
                           "Could not connect to " + host + " to fetch " + what + " (" + detail +
                               "). Are you offline, or is the endpoint down? Models imported "
                               "before still load from the cache; use offline mode to skip the "
                               "network.");
        case CURLE_COULDNT_RESOLVE_HOST:
            throw HubError(HubErrorKind::Dns,
                           "Could not resolve the host name '" + url_host(url) +
                               "' (DNS failure) while fetching " + what +
                               ". Check the network connection, and HF_ENDPOINT if you set it "
                               "(the endpoint is " + opt.endpoint + ").");
        case CURLE_COULDNT_RESOLVE_PROXY:
            throw HubError(HubErrorKind::Dns,
                           "Could not resolve the proxy host (" + detail +
                               "). Check the proxy variables (https_proxy, http_proxy, "
                               "all_proxy, no_proxy).");
        case CURLE_OPERATION_TIMEDOUT:
            if (!connected)
                throw HubError(HubErrorKind::Timeout,
                               "Connecting to " + host + " timed out after " +
                                   seconds_text(opt.connect_timeout) + " while fetching " + what +
                                   ". The network or the endpoint is not answering; try again, "
                                   "or use offline mode for models imported before.");
            throw HubError(HubErrorKind::Timeout,
                           host + " did not deliver " + what + " within " +
                               seconds_text(opt.total_timeout) +
                               " (the total timeout for one request). The server or the "
                               "connection is too slow right now; try again later.");
        case CURLE_ABORTED_BY_CALLBACK:
            throw HubError(HubErrorKind::Cancelled, "Import cancelled.");
        case CURLE_FILESIZE_EXCEEDED:
            throw HubError(HubErrorKind::TooLarge,
                           "The answer for " + what + " from " + host + " is larger than " +
                               std::to_string(opt.max_response_bytes) +
                               " bytes, the limit for one response; Wingspan reads only "
                               "configs, indexes and safetensors headers, which are far "
                               "smaller. Refusing to read it.");
        case CURLE_PEER_FAILED_VERIFICATION:
        case CURLE_SSL_CONNECT_ERROR:
        case CURLE_SSL_CERTPROBLEM:
        case CURLE_SSL_CIPHER:
        case CURLE_SSL_CACERT_BADFILE:
        case CURLE_SSL_ISSUER_ERROR:
        case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
        case CURLE_SSL_INVALIDCERTSTATUS:
        case CURLE_SSL_CRL_BADFILE:
        case CURLE_SSL_ENGINE_INITFAILED:
        case CURLE_SSL_ENGINE_NOTFOUND:
        case CURLE_SSL_ENGINE_SETFAILED:
        case CURLE_USE_SSL_FAILED:
            throw HubError(HubErrorKind::Tls,
                           "The TLS connection to " + host + " could not be verified (" + detail +
                               "). Wingspan never turns certificate checks off; if a proxy "
                               "re-signs traffic, point CURL_CA_BUNDLE or SSL_CERT_FILE at its "
                               "CA certificate.");
        case CURLE_UNSUPPORTED_PROTOCOL:
        case CURLE_URL_MALFORMAT:
            throw HubError(HubErrorKind::Network,
                           "Cannot fetch '" + url + "' (" + detail +
                               "). The endpoint must be an http:// or https:// URL; check "
                               "HF_ENDPOINT (now " + opt.endpoint + ").");
        default:
            throw HubError(HubErrorKind::Network,
                           "The transfer of " + what + " from " + host + " failed (" + detail +
                               "). Nothing was cached; try again.");
    }
}

std::optional<std::uint64_t> parse_u64(const std::string& s) {
    if (s.empty() || !std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; }))
        return std::nullopt;
    try {
        return std::stoull(s);
    } catch (...) {
        return std::nullopt;
    }
}

}  // namespace

HttpClient::HttpClient(const HubOptions& options, CancelFlag cancel)
    : options_(options), cancel_(cancel) {
    std::call_once(g_curl_init, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
    curl_ = curl_easy_init();
    if (!curl_) throw HubError(HubErrorKind::Network, "Could not initialise libcurl.");
}

HttpClient::~HttpClient() {
    if (curl_) curl_easy_cleanup(static_cast<CURL*>(curl_));
}

HttpResponse HttpClient::get(const std::string& url, const std::optional<ByteRange>& range,
                             const std::string& what) {
    return get_via(url, range, what, nullptr, 0);
}

HttpResponse HttpClient::get_to(const std::string& url, const std::optional<ByteRange>& range,
                                const std::string& what, const BodySink& sink, std::uint64_t limit) {
    return get_via(url, range, what, &sink, limit);
}

HttpResponse HttpClient::get_via(const std::string& url, const std::optional<ByteRange>& range,
                                 const std::string& what, const BodySink* sink, std::uint64_t limit) {
    const std::string home = url_origin(options_.endpoint);
    // The total timeout covers the whole request, redirects included.
    const auto deadline = std::chrono::steady_clock::now() + options_.total_timeout;
    std::string current = url;
    for (int hop = 0;; ++hop) {
        std::string origin = url_origin(current);
        bool same_origin = !home.empty() && origin == home;
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0)
            throw HubError(HubErrorKind::Timeout,
                           url_host(current) + " did not deliver " + what + " within " +
                               seconds_text(options_.total_timeout) +
                               " (the total timeout for one request, redirects included).");
        HttpResponse r = get_once(current, range, what, same_origin, static_cast<long>(left.count()), sink, limit);
        bool redirect = r.status == 301 || r.status == 302 || r.status == 303 ||
                        r.status == 307 || r.status == 308;
        if (!redirect) return r;
        char* loc = nullptr;
        curl_easy_getinfo(static_cast<CURL*>(curl_), CURLINFO_REDIRECT_URL, &loc);
        if (!loc || !*loc)
            throw HubError(HubErrorKind::HttpError,
                           url_host(current) + " answered HTTP " + std::to_string(r.status) +
                               " for " + what + " without saying where to go (no Location).",
                           r.status);
        std::string next = loc;
        std::string next_origin = url_origin(next);
        if (next_origin.rfind("http://", 0) != 0 && next_origin.rfind("https://", 0) != 0)
            throw HubError(HubErrorKind::HttpError,
                           "Refusing a redirect for " + what + " to '" + next +
                               "': only http and https are followed.",
                           r.status);
        if (origin.rfind("https://", 0) == 0 && next_origin.rfind("http://", 0) == 0)
            throw HubError(HubErrorKind::HttpError,
                           "Refusing a redirect for " + what + " from https to plain http ('" +
                               url_host(next) + "').",
                           r.status);
        if (hop + 1 > options_.max_redirects)
            throw HubError(HubErrorKind::HttpError,
                           "Too many redirects (more than " +
                               std::to_string(options_.max_redirects) + ") while fetching " +
                               what + "; last one pointed at " + url_host(next) + ".",
                           r.status);
        current = next;
    }
}

HttpResponse HttpClient::get_once(const std::string& url, const std::optional<ByteRange>& range,
                                  const std::string& what, bool send_token, long timeout_ms,
                                  const BodySink* sink, std::uint64_t limit) {
    if (cancel_ && cancel_->load()) throw HubError(HubErrorKind::Cancelled, "Import cancelled.");
    CURL* c = static_cast<CURL*>(curl_);
    curl_easy_reset(c);

    Transfer t;
    t.limit = options_.max_response_bytes;
    t.cancel = cancel_;
    t.sink = sink;
    t.sink_limit = limit;
    if (range) {
        t.want = range->length();
        t.skip = range->first;
    }
    char errbuf[CURL_ERROR_SIZE] = {0};

    curl_slist* headers = nullptr;
    std::string auth;
    if (send_token && !options_.token.empty()) {
        if (options_.token.find_first_of("\r\n") != std::string::npos)
            throw HubError(HubErrorKind::Unauthorized,
                           "The Hub token (HF_TOKEN) contains a line break; give the token "
                           "alone, on one line.");
        auth = "Authorization: Bearer " + options_.token;
        headers = curl_slist_append(headers, auth.c_str());
    }
    std::string range_header;
    if (range) {
        range_header = "Range: " + range->header_value();
        headers = curl_slist_append(headers, range_header.c_str());
    }
    headers = curl_slist_append(headers, "Accept: */*");

    curl_easy_setopt(c, CURLOPT_URL, url.c_str());
    curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(c, CURLOPT_USERAGENT, "wingspan/" WINGSPAN_VERSION_STRING);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);   // redirects are followed above
#if LIBCURL_VERSION_NUM >= 0x075500
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
#else
    curl_easy_setopt(c, CURLOPT_PROTOCOLS, static_cast<long>(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 1L);
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 2L);
    if (!options_.ca_bundle.empty()) curl_easy_setopt(c, CURLOPT_CAINFO, options_.ca_bundle.c_str());
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(options_.connect_timeout.count()));
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, std::max(1L, timeout_ms));
    if (sink) {   // a download may take hours; a stalled one must not
        curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
        curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME,
                         std::max(1L, static_cast<long>(options_.connect_timeout.count() * 3 / 1000)));
    }
    if (!range && !sink)
        curl_easy_setopt(c, CURLOPT_MAXFILESIZE_LARGE,
                         static_cast<curl_off_t>(options_.max_response_bytes));
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, &t);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &t);
    curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(c, CURLOPT_XFERINFODATA, &t);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
    // Proxies: libcurl reads http_proxy, https_proxy, all_proxy and no_proxy itself.

    CURLcode rc = curl_easy_perform(c);
    curl_slist_free_all(headers);
    if (!auth.empty()) std::fill(auth.begin(), auth.end(), '\0');

    if (t.oversize)
        throw HubError(HubErrorKind::TooLarge,
                       "The answer for " + what + " from " + url_host(url) + " is larger than " +
                           std::to_string(options_.max_response_bytes) +
                           " bytes, the limit for one response; Wingspan reads only configs, "
                           "indexes and safetensors headers, which are far smaller. Refusing "
                           "to read it.");
    if (t.sink_stopped)
        throw HubError(HubErrorKind::Filesystem, "Stopped the transfer of " + what + ": it could not be stored.");
    if (t.overlong)
        throw HubError(HubErrorKind::TooLarge,
                       url_host(url) + " sent more of " + what + " than the " + std::to_string(sink_limit(&t)) +
                           " bytes it should hold; the transfer was cut off there and nothing beyond was written.");
    bool ok = rc == CURLE_OK || (rc == CURLE_WRITE_ERROR && t.enough);
    if (!ok) {
        curl_off_t connect_us = 0;
        curl_easy_getinfo(c, CURLINFO_CONNECT_TIME_T, &connect_us);
        throw_transport(rc, errbuf, url, what, options_, connect_us > 0);
    }

    HttpResponse r;
    long code = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
    r.status = code ? code : t.status;
    r.body = std::move(t.body);
    r.headers = std::move(t.headers);
    r.url = url;
    if (r.status == 206) {
        // Content-Range: bytes first-last/total
        auto it = r.headers.find("content-range");
        if (it != r.headers.end()) {
            const std::string& v = it->second;
            auto slash = v.find('/');
            auto dash = v.find('-');
            auto sp = v.find(' ');
            if (slash != std::string::npos) r.total_size = parse_u64(v.substr(slash + 1));
            if (range && sp != std::string::npos && dash != std::string::npos && dash > sp) {
                auto first = parse_u64(v.substr(sp + 1, dash - sp - 1));
                if (first && *first != range->first)
                    throw HubError(HubErrorKind::Network,
                                   url_host(url) + " answered the request for " + what +
                                       " with a different byte range (" + v + ", asked for " +
                                       range->header_value() + ").",
                                   r.status);
            }
        }
    } else if (r.status == 200) {
        auto it = r.headers.find("content-length");
        if (it != r.headers.end()) r.total_size = parse_u64(it->second);
        if (range && r.body.size() > range->length()) r.body.resize(range->length());
    }
    return r;
}

// ---- Retry-After ----------------------------------------------------------------------

std::optional<long> parse_retry_after(const std::string& value,
                                      std::chrono::system_clock::time_point now) {
    std::string v = trim(value);
    if (v.empty()) return std::nullopt;
    if (auto n = parse_u64(v)) return static_cast<long>(std::min<std::uint64_t>(*n, 10'000'000));
    // HTTP-date, IMF-fixdate: "Sun, 06 Nov 1994 08:49:37 GMT"
    std::tm tm{};
    std::istringstream in(v);
    in.imbue(std::locale::classic());
    in >> std::get_time(&tm, "%a, %d %b %Y %H:%M:%S");
    if (in.fail()) return std::nullopt;
    std::time_t when = timegm(&tm);
    if (when == static_cast<std::time_t>(-1)) return std::nullopt;
    auto now_t = std::chrono::system_clock::to_time_t(now);
    long diff = static_cast<long>(when - now_t);
    return diff < 0 ? 0 : diff;
}

}  // namespace detail

std::string resolve_url(const std::string& endpoint, const std::string& repo_id,
                        const std::string& revision, const std::string& file) {
    std::string e = endpoint;
    while (!e.empty() && e.back() == '/') e.pop_back();
    return e + "/" + detail::percent_encode(repo_id, true) + "/resolve/" +
           detail::percent_encode(revision, false) + "/" + detail::percent_encode(file, true);
}

}  // namespace wingspan::hub
