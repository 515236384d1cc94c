#pragma once
// A small HTTP/1.1 server on 127.0.0.1 (ephemeral port) for the Hub client's tests: plain
// POSIX sockets, one thread per connection, "Connection: close" on every answer.
// Serves routes the test sets: files (with Range support), status codes with headers
// (Retry-After, X-Error-Code, Location), slow answers, lying Content-Length, chunked bodies.
// Records every request (method, path, headers) for assertions.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#ifndef MSG_NOSIGNAL   // macOS: SO_NOSIGPIPE per socket instead
#define MSG_NOSIGNAL 0
#endif

namespace hubtest {

struct Request {
    std::string method;
    std::string path;                            // without the query
    std::map<std::string, std::string> headers;  // lower-case names
    std::string header(const std::string& name) const {
        auto it = headers.find(name);
        return it == headers.end() ? std::string() : it->second;
    }
};

struct Route {
    int status = 200;
    std::string body;
    std::vector<std::pair<std::string, std::string>> headers;
    int delay_ms = 0;                           // before the status line
    int body_delay_ms = 0;                      // after the headers, before the body
    bool honour_range = true;                   // 200 + Range -> 206 with Content-Range
    bool chunked = false;                       // Transfer-Encoding: chunked, no length
    std::optional<std::size_t> claimed_length;  // a Content-Length that lies
    std::string location;                       // sent as Location (redirects)
    std::string require_bearer;                 // if set: 401 unless "Bearer <this>" is sent
};

class TestHttpServer {
public:
    TestHttpServer() { start(); }
    ~TestHttpServer() { stop(); }
    TestHttpServer(const TestHttpServer&) = delete;
    TestHttpServer& operator=(const TestHttpServer&) = delete;

    int port() const { return port_; }
    std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
    bool running() const { return running_; }

    void route(const std::string& path, Route r) {
        std::lock_guard<std::mutex> lock(mu_);
        routes_[path] = std::move(r);
    }
    void file(const std::string& path, std::string bytes) {
        Route r;
        r.body = std::move(bytes);
        route(path, std::move(r));
    }
    void remove(const std::string& path) {
        std::lock_guard<std::mutex> lock(mu_);
        routes_.erase(path);
    }
    std::vector<Request> requests() const {
        std::lock_guard<std::mutex> lock(mu_);
        return requests_;
    }
    void clear_requests() {
        std::lock_guard<std::mutex> lock(mu_);
        requests_.clear();
    }
    int count(const std::string& path) const {
        std::lock_guard<std::mutex> lock(mu_);
        return static_cast<int>(std::count_if(requests_.begin(), requests_.end(),
                                              [&](const Request& r) { return r.path == path; }));
    }

    void stop() {
        if (!running_) return;
        stop_ = true;
        if (accept_thread_.joinable()) accept_thread_.join();
        std::vector<std::thread> threads;
        {
            std::lock_guard<std::mutex> lock(mu_);
            threads.swap(workers_);
        }
        for (auto& t : threads)
            if (t.joinable()) t.join();
        ::close(listen_fd_);
        listen_fd_ = -1;
        running_ = false;
    }

private:
    void start() {
        listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
        if (listen_fd_ < 0) throw std::runtime_error("socket() failed");
        int one = 1;
        ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        addr.sin_port = 0;
        if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0)
            throw std::runtime_error("bind(127.0.0.1:0) failed");
        socklen_t len = sizeof addr;
        ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
        port_ = ntohs(addr.sin_port);
        if (::listen(listen_fd_, 64) != 0) throw std::runtime_error("listen() failed");
        running_ = true;
        accept_thread_ = std::thread([this] { accept_loop(); });
    }

    void accept_loop() {
        while (!stop_) {
            pollfd p{listen_fd_, POLLIN, 0};
            if (::poll(&p, 1, 20) <= 0) continue;
            int fd = ::accept(listen_fd_, nullptr, nullptr);
            if (fd < 0) continue;
#ifdef SO_NOSIGPIPE
            int one = 1;
            ::setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &one, sizeof one);
#endif
            std::lock_guard<std::mutex> lock(mu_);
            workers_.emplace_back([this, fd] {
                serve(fd);
                ::close(fd);
            });
        }
    }

    bool sleep_ms(int ms) {   // false if stopped meanwhile
        auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
        while (std::chrono::steady_clock::now() < until) {
            if (stop_) return false;
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
        return !stop_;
    }

    static bool send_all(int fd, const std::string& data) {
        size_t sent = 0;
        while (sent < data.size()) {
            ssize_t n = ::send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
            if (n <= 0) return false;
            sent += static_cast<size_t>(n);
        }
        return true;
    }

    static std::string lower(std::string s) {
        for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        return s;
    }

    static const char* reason(int status) {
        switch (status) {
            case 200: return "OK";
            case 206: return "Partial Content";
            case 301: return "Moved Permanently";
            case 302: return "Found";
            case 307: return "Temporary Redirect";
            case 308: return "Permanent Redirect";
            case 401: return "Unauthorized";
            case 403: return "Forbidden";
            case 404: return "Not Found";
            case 416: return "Range Not Satisfiable";
            case 429: return "Too Many Requests";
            case 500: return "Internal Server Error";
            case 502: return "Bad Gateway";
            case 503: return "Service Unavailable";
            default: return "Status";
        }
    }

    void serve(int fd) {
        std::string in;
        while (in.find("\r\n\r\n") == std::string::npos) {
            if (stop_ || in.size() > 65536) return;
            pollfd p{fd, POLLIN, 0};
            if (::poll(&p, 1, 20) <= 0) continue;
            char buf[4096];
            ssize_t n = ::recv(fd, buf, sizeof buf, 0);
            if (n <= 0) return;
            in.append(buf, static_cast<size_t>(n));
        }
        Request req;
        std::string head = in.substr(0, in.find("\r\n\r\n"));
        size_t pos = head.find("\r\n");
        std::string first = head.substr(0, pos);
        auto sp1 = first.find(' '), sp2 = first.rfind(' ');
        req.method = first.substr(0, sp1);
        std::string target = first.substr(sp1 + 1, sp2 - sp1 - 1);
        req.path = target.substr(0, target.find('?'));
        while (pos != std::string::npos && pos < head.size()) {
            size_t next = head.find("\r\n", pos + 2);
            std::string line = head.substr(pos + 2, next == std::string::npos ? std::string::npos : next - pos - 2);
            auto colon = line.find(':');
            if (colon != std::string::npos) {
                std::string v = line.substr(colon + 1);
                while (!v.empty() && v.front() == ' ') v.erase(v.begin());
                req.headers[lower(line.substr(0, colon))] = v;
            }
            pos = next;
        }

        Route r;
        bool found = false;
        {
            std::lock_guard<std::mutex> lock(mu_);
            requests_.push_back(req);
            auto it = routes_.find(req.path);
            if (it != routes_.end()) {
                r = it->second;
                found = true;
            }
        }
        if (!found) {
            r = Route{};
            r.status = 404;
            r.body = "Entry not found";
            r.headers = {{"X-Error-Code", "EntryNotFound"}};
        }
        if (!r.require_bearer.empty() && req.header("authorization") != "Bearer " + r.require_bearer) {
            r = Route{};
            r.status = 401;
            r.body = "{\"error\":\"Access to this model is restricted.\"}";
            r.headers = {{"X-Error-Code", "GatedRepo"},
                         {"X-Error-Message", "Access to model is restricted and you are not in the authorized list."}};
        }
        if (r.delay_ms > 0 && !sleep_ms(r.delay_ms)) return;

        int status = r.status;
        std::string body = r.body;
        std::vector<std::pair<std::string, std::string>> headers = r.headers;
        std::string range = req.header("range");
        if (status == 200 && r.honour_range && range.rfind("bytes=", 0) == 0) {
            std::string spec = range.substr(6);
            auto dash = spec.find('-');
            std::uint64_t total = body.size();
            std::uint64_t a = 0, b = total ? total - 1 : 0;
            if (dash == 0) {   // suffix: last n bytes
                std::uint64_t n = std::stoull(spec.substr(1));
                a = n >= total ? 0 : total - n;
            } else {
                a = std::stoull(spec.substr(0, dash));
                if (dash + 1 < spec.size()) b = std::min<std::uint64_t>(std::stoull(spec.substr(dash + 1)), total - 1);
            }
            if (a >= total) {
                status = 416;
                body.clear();
                headers.push_back({"Content-Range", "bytes */" + std::to_string(total)});
            } else {
                status = 206;
                body = r.body.substr(a, b - a + 1);
                headers.push_back({"Content-Range", "bytes " + std::to_string(a) + "-" +
                                                        std::to_string(b) + "/" + std::to_string(total)});
            }
        }
        std::string out = "HTTP/1.1 " + std::to_string(status) + " " + reason(status) + "\r\n";
        for (const auto& [k, v] : headers) out += k + ": " + v + "\r\n";
        if (!r.location.empty()) out += "Location: " + r.location + "\r\n";
        if (r.chunked)
            out += "Transfer-Encoding: chunked\r\n";
        else
            out += "Content-Length: " + std::to_string(r.claimed_length ? *r.claimed_length : body.size()) + "\r\n";
        out += "Connection: close\r\n\r\n";
        if (!send_all(fd, out)) return;
        if (r.body_delay_ms > 0 && !sleep_ms(r.body_delay_ms)) return;
        if (req.method == "HEAD") return;
        if (r.chunked) {
            for (size_t off = 0; off < body.size(); off += 4096) {
                std::string chunk = body.substr(off, 4096);
                char size[32];
                std::snprintf(size, sizeof size, "%zx\r\n", chunk.size());
                if (!send_all(fd, size + chunk + "\r\n")) return;
            }
            send_all(fd, "0\r\n\r\n");
        } else {
            send_all(fd, body);
        }
        ::shutdown(fd, SHUT_WR);
        // Drain until the client closes, so it reads everything before the reset.
        for (int i = 0; i < 50 && !stop_; ++i) {
            pollfd p{fd, POLLIN, 0};
            if (::poll(&p, 1, 20) <= 0) continue;
            char buf[1024];
            if (::recv(fd, buf, sizeof buf, 0) <= 0) break;
        }
    }

    int listen_fd_ = -1;
    int port_ = 0;
    std::atomic<bool> stop_{false};
    std::atomic<bool> running_{false};
    std::thread accept_thread_;
    mutable std::mutex mu_;
    std::vector<std::thread> workers_;
    std::map<std::string, Route> routes_;
    std::vector<Request> requests_;
};

}  // namespace hubtest
