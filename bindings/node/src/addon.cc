// addon.cc - the native half of the Node package: libdecree's public API
// (include/decree/*.h) as Promise-returning methods of a NativeStore.
//
// Threads: every decree call runs in an AsyncWorker on libuv's thread
// pool, never on the main thread.  Everything a call produces (ids,
// lists, plans, notices, the error message) is copied into C++ values on
// that worker thread, because decree's last error and warning are
// thread-local and what the handle lends (notices, damaged records) lives
// only until its next call; the main thread then turns the copies into JS
// values (OnOK).  A decree_store is used by one thread at a time: the JS
// side (index.js) queues the calls of one Store, and `busy_` refuses a
// second call that would overlap (a defect of the caller, never a race).
//
// Errors: a call that returns a negative decree_error_code rejects with a
// DecreeError (the class index.js registers with setErrorClass) whose
// `code` is the name decree's --json errors use ("not_found", ...),
// `errno` the negative number, and message decree_error_last().
#include <napi.h>

#include <decree/decree.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace
{

// The message of a failure the addon itself finds on a worker thread
// (decree's own slot cannot be set from outside the library).
thread_local std::string addon_error;

// --- errors ------------------------------------------------------------------

struct AddonData {
	Napi::FunctionReference errorClass;
	Napi::FunctionReference storeClass;
	Napi::FunctionReference cancelClass;
};

const char *code_name(int code)
{
	return decree_error_name(code); /* the CLI's --json codes */
}

Napi::Object make_error(Napi::Env env, int code, const std::string &msg)
{
	AddonData *d = env.GetInstanceData<AddonData>();
	Napi::String m = Napi::String::New(env, msg);
	Napi::String c = Napi::String::New(env, code_name(code));
	Napi::Number n = Napi::Number::New(env, code < 0 ? code : -1);
	if (d && !d->errorClass.IsEmpty())
		return d->errorClass.New({ m, c, n });
	Napi::Object e = Napi::Error::New(env, msg).Value();
	e.Set("code", c);
	e.Set("errno", n);
	return e;
}

[[noreturn]] void throw_decree(Napi::Env env, int code, const std::string &msg)
{
	throw Napi::Error(env, make_error(env, code, msg));
}

// --- reading arguments (the JS side has checked the types; these check
// again so that a direct call cannot pass what C cannot take) --------------

std::string str_value(Napi::Env env, Napi::Value v, const char *what)
{
	if (!v.IsString())
		throw Napi::TypeError::New(env, std::string(what) +
							" must be a string");
	std::string s = v.As<Napi::String>().Utf8Value();
	if (s.find('\0') != std::string::npos)
		throw_decree(env, DECREE_EINVALID,
			     std::string(what) + " holds a NUL character");
	return s;
}

bool absent(Napi::Value v)
{
	return v.IsUndefined() || v.IsNull();
}

Napi::Object opts_arg(const Napi::CallbackInfo &info, size_t i)
{
	if (info.Length() <= i || absent(info[i]))
		return Napi::Object::New(info.Env());
	if (!info[i].IsObject())
		throw Napi::TypeError::New(info.Env(),
					   "options must be an object");
	return info[i].As<Napi::Object>();
}

std::optional<std::string> opt_str(Napi::Object o, const char *key)
{
	Napi::Value v = o.Get(key);
	if (absent(v))
		return std::nullopt;
	return str_value(o.Env(), v, key);
}

bool opt_bool(Napi::Object o, const char *key)
{
	Napi::Value v = o.Get(key);
	if (absent(v))
		return false;
	if (!v.IsBoolean())
		throw Napi::TypeError::New(
			o.Env(), std::string(key) + " must be a boolean");
	return v.As<Napi::Boolean>().Value();
}

// A non-negative integer (number or bigint); `dflt` when absent.
uint64_t opt_u64(Napi::Object o, const char *key, uint64_t dflt)
{
	Napi::Value v = o.Get(key);
	if (absent(v))
		return dflt;
	if (v.IsBigInt()) {
		bool lossless;
		uint64_t n = v.As<Napi::BigInt>().Uint64Value(&lossless);
		if (!lossless)
			throw Napi::RangeError::New(
				o.Env(), std::string(key) + " is out of range");
		return n;
	}
	if (!v.IsNumber())
		throw Napi::TypeError::New(
			o.Env(), std::string(key) + " must be a number");
	double d = v.As<Napi::Number>().DoubleValue();
	if (!(d >= 0) || d > 9007199254740991.0 || d != (double)(uint64_t)d)
		throw Napi::RangeError::New(
			o.Env(),
			std::string(key) + " must be a non-negative integer");
	return (uint64_t)d;
}

// A list of strings (NULL-terminated for C by cstrs()).
struct StrList {
	bool set = false;
	std::vector<std::string> v;
	std::vector<const char *> p;
	const char *const *cstrs()
	{
		if (!set)
			return nullptr;
		p.clear();
		for (const std::string &s : v)
			p.push_back(s.c_str());
		p.push_back(nullptr);
		return p.data();
	}
};

StrList opt_strs(Napi::Object o, const char *key)
{
	StrList l;
	Napi::Value v = o.Get(key);
	if (absent(v))
		return l;
	if (!v.IsArray())
		throw Napi::TypeError::New(
			o.Env(), std::string(key) + " must be an array");
	Napi::Array a = v.As<Napi::Array>();
	l.set = true;
	for (uint32_t i = 0; i < a.Length(); i++)
		l.v.push_back(str_value(o.Env(), a.Get(i), key));
	return l;
}

std::string nz(const char *s)
{
	return s ? s : "";
}

std::optional<std::string> opt_of(const char *s)
{
	if (!s)
		return std::nullopt;
	return std::string(s);
}

Napi::Value js_opt(Napi::Env env, const std::optional<std::string> &s)
{
	if (!s)
		return env.Null();
	return Napi::String::New(env, *s);
}

Napi::Value js_num(Napi::Env env, double n)
{
	return Napi::Number::New(env, n);
}

// --- copies of what decree returns ----------------------------------------

struct Info {
	std::string id, tree, created_at;
	std::optional<std::string> session, message, label;
	int64_t created_ns = 0;
	uint64_t file_count = 0, total_bytes = 0, skipped_count = 0;
	bool has_changes = false, capture = false;
	int64_t files_changed = -1, insertions = -1, deletions = -1;
};

Info copy_info(const decree_checkpoint_info *c)
{
	Info i;
	i.id = c->id;
	i.tree = c->tree;
	i.created_at = c->created_at;
	i.session = opt_of(c->session);
	i.message = opt_of(c->message);
	i.label = opt_of(c->label);
	i.created_ns = c->created_ns;
	i.file_count = c->file_count;
	i.total_bytes = c->total_bytes;
	i.skipped_count = c->skipped_count;
	i.has_changes = c->has_changes;
	i.capture = decree_checkpoint_is_capture(c);
	i.files_changed = c->files_changed;
	i.insertions = c->insertions;
	i.deletions = c->deletions;
	return i;
}

Napi::Value count_or_null(Napi::Env env, int64_t n)
{
	return n < 0 ? env.Null() : js_num(env, (double)n);
}

Napi::Object js_info(Napi::Env env, const Info &i, bool with_changes)
{
	Napi::Object o = Napi::Object::New(env);
	o.Set("id", i.id);
	o.Set("session", js_opt(env, i.session));
	o.Set("message", js_opt(env, i.message));
	o.Set("label", js_opt(env, i.label));
	o.Set("createdAt", i.created_at);
	o.Set("createdNs", Napi::BigInt::New(env, i.created_ns));
	o.Set("fileCount", js_num(env, (double)i.file_count));
	o.Set("totalBytes", js_num(env, (double)i.total_bytes));
	o.Set("skippedCount", js_num(env, (double)i.skipped_count));
	if (with_changes)
		o.Set("hasChanges", i.has_changes);
	o.Set("tree", i.tree);
	o.Set("capture", i.capture);
	o.Set("filesChanged", count_or_null(env, i.files_changed));
	o.Set("insertions", count_or_null(env, i.insertions));
	o.Set("deletions", count_or_null(env, i.deletions));
	return o;
}

struct Notice {
	int kind = 0;
	std::string message, checkpoint, created_at;
	uint64_t count = 0, files = 0, size = 0, limit = 0, rule_count = 0;
	std::optional<std::string> path, rule_source, rule, session, msg, label;
	std::vector<std::string> paths;
};

std::vector<Notice> copy_notices(const decree_store *s)
{
	std::vector<Notice> out;
	for (size_t k = 0; k < decree_notice_count(s); k++) {
		const decree_notice *n = decree_notice_at(s, k);
		Notice c;
		c.kind = n->kind;
		c.message = nz(n->message);
		c.checkpoint = n->checkpoint;
		c.created_at = n->created_at;
		c.count = n->count;
		c.files = n->files;
		c.size = n->size;
		c.limit = n->limit;
		c.rule_count = n->rule_count;
		c.path = opt_of(n->path);
		c.rule_source = opt_of(n->rule_source);
		c.rule = opt_of(n->rule);
		c.session = opt_of(n->session);
		c.msg = opt_of(n->msg);
		c.label = opt_of(n->label);
		for (size_t i = 0; i < n->npaths; i++)
			c.paths.push_back(nz(n->paths[i]));
		out.push_back(std::move(c));
	}
	return out;
}

Napi::Array js_notices(Napi::Env env, const std::vector<Notice> &ns)
{
	Napi::Array a = Napi::Array::New(env, ns.size());
	for (size_t k = 0; k < ns.size(); k++) {
		const Notice &n = ns[k];
		Napi::Object o = Napi::Object::New(env);
		o.Set("kind",
		      decree_notice_kind_name((decree_notice_kind)n.kind));
		o.Set("message", n.message);
		o.Set("checkpoint",
		      n.checkpoint.empty()
			      ? env.Null()
			      : Napi::String::New(env, n.checkpoint));
		switch (n.kind) {
		case DECREE_NOTICE_MOSTLY_IGNORED:
			o.Set("count", js_num(env, (double)n.count));
			o.Set("files", js_num(env, (double)n.files));
			o.Set("ruleSource", js_opt(env, n.rule_source));
			o.Set("rule", js_opt(env, n.rule));
			o.Set("ruleCount", js_num(env, (double)n.rule_count));
			break;
		case DECREE_NOTICE_EXISTING:
			o.Set("createdAt", n.created_at);
			o.Set("session", js_opt(env, n.session));
			o.Set("msg", js_opt(env, n.msg));
			break;
		case DECREE_NOTICE_TOO_LARGE:
			o.Set("count", js_num(env, (double)n.count));
			o.Set("path", js_opt(env, n.path));
			o.Set("size", js_num(env, (double)n.size));
			o.Set("limit", js_num(env, (double)n.limit));
			break;
		case DECREE_NOTICE_EDITS_SAVED: {
			o.Set("count", js_num(env, (double)n.count));
			o.Set("label", js_opt(env, n.label));
			Napi::Array p = Napi::Array::New(env, n.paths.size());
			for (size_t i = 0; i < n.paths.size(); i++)
				p.Set((uint32_t)i, n.paths[i]);
			o.Set("paths", p);
			break;
		}
		case DECREE_NOTICE_WORKSPACE:
			// label: the workspace's name; path: its directory;
			// count: 1 made again (undo), 0 discarded (redo)
			o.Set("label", js_opt(env, n.label));
			o.Set("path", js_opt(env, n.path));
			o.Set("count", js_num(env, (double)n.count));
			break;
		default:
			break;
		}
		a.Set((uint32_t)k, o);
	}
	return a;
}

struct PathAction {
	std::string path;
	std::string action;
	std::optional<std::string> detail;
};

Napi::Array js_path_actions(Napi::Env env, const std::vector<PathAction> &v)
{
	Napi::Array a = Napi::Array::New(env, v.size());
	for (size_t k = 0; k < v.size(); k++) {
		Napi::Object o = Napi::Object::New(env);
		o.Set("path", v[k].path);
		o.Set("action", v[k].action);
		if (v[k].detail)
			o.Set("detail", *v[k].detail);
		a.Set((uint32_t)k, o);
	}
	return a;
}

// --- cancellation: a flag the JS side sets from an AbortSignal --------------

struct CancelFlag : public Napi::ObjectWrap<CancelFlag> {
	std::shared_ptr<volatile int> flag;

	explicit CancelFlag(const Napi::CallbackInfo &info)
	    : Napi::ObjectWrap<CancelFlag>(info), flag(new volatile int(0))
	{
	}

	Napi::Value Set(const Napi::CallbackInfo &info)
	{
		*flag = 1;
		return info.Env().Undefined();
	}

	static Napi::Function Init(Napi::Env env)
	{
		return DefineClass(env, "CancelFlag",
				   { InstanceMethod("set", &CancelFlag::Set) });
	}
};

std::shared_ptr<volatile int> opt_cancel(Napi::Object o)
{
	Napi::Value v = o.Get("cancel");
	if (absent(v))
		return nullptr;
	AddonData *d = o.Env().GetInstanceData<AddonData>();
	if (!v.IsObject() ||
	    !v.As<Napi::Object>().InstanceOf(d->cancelClass.Value()))
		throw Napi::TypeError::New(o.Env(),
					   "cancel must be a CancelFlag");
	return CancelFlag::Unwrap(v.As<Napi::Object>())->flag;
}

// --- the worker
// ----------------------------------------------------------------

// One decree call off the main thread.  `work` runs on a pool thread and
// returns decree's status; `done` builds the result on the main thread;
// `decorate` (optional) adds fields to the DecreeError of a failure.
class Job : public Napi::AsyncWorker
{
      public:
	using Work = std::function<int()>;
	using Done = std::function<Napi::Value(Napi::Env)>;
	using Decorate = std::function<void(Napi::Env, Napi::Object)>;

	Job(Napi::Env env, Napi::Object holder, std::atomic<bool> *busy,
	    Work work, Done done, Decorate decorate = nullptr)
	    : Napi::AsyncWorker(env, "decree"),
	      deferred_(Napi::Promise::Deferred::New(env)), busy_(busy),
	      work_(std::move(work)), done_(std::move(done)),
	      decorate_(std::move(decorate))
	{
		holder_ = Napi::Persistent(holder);
	}

	Napi::Promise Start()
	{
		Napi::Promise p = deferred_.Promise();
		Queue();
		return p;
	}

      protected:
	void Execute() override
	{
		decree_error_clear();
		decree_warning_clear();
		addon_error.clear();
		try {
			rc_ = work_();
		} catch (const std::exception &e) {
			rc_ = DECREE_ERROR;
			decree_error_clear();
			message_ = std::string("out of memory: ") + e.what();
			return;
		}
		if (rc_ < 0) {
			message_ = addon_error.empty() ? decree_error_last()
						       : addon_error;
			if (message_.empty())
				message_ = "operation failed";
		}
		warning_ = decree_warning_last();
		warning_code_ = decree_warning_last_code();
	}

	void OnOK() override
	{
		Napi::Env env = Env();
		Napi::HandleScope scope(env);
		release();
		if (rc_ < 0) {
			Napi::Object e = make_error(env, rc_, message_);
			if (decorate_)
				decorate_(env, e);
			deferred_.Reject(e);
			return;
		}
		try {
			Napi::Value v = done_(env);
			if (!warning_.empty() && v.IsObject() && !v.IsArray()) {
				Napi::Object o = v.As<Napi::Object>();
				o.Set("warning", warning_);
				o.Set("warningCode",
				      warning_code_ ? code_name(warning_code_)
						    : "note");
			}
			deferred_.Resolve(v);
		} catch (const Napi::Error &e) {
			deferred_.Reject(e.Value());
		}
	}

	void OnError(const Napi::Error &e) override
	{
		release();
		deferred_.Reject(e.Value());
	}

      private:
	void release()
	{
		if (busy_)
			busy_->store(false);
	}

	Napi::Promise::Deferred deferred_;
	Napi::ObjectReference holder_; // keeps the store alive meanwhile
	std::atomic<bool> *busy_;
	Work work_;
	Done done_;
	Decorate decorate_;
	int rc_ = 0;
	std::string message_, warning_;
	int warning_code_ = 0;
};

// --- restore-like results ----------------------------------------------------

struct RestoreState {
	StrList paths;
	bool dry_run = false, agent_only = false;
	std::shared_ptr<volatile int> cancel;
	decree_restore_result res{};
	std::vector<PathAction> plan;
	std::vector<Notice> notices;

	decree_restore_options options()
	{
		decree_restore_options o = DECREE_RESTORE_OPTIONS_INIT;
		o.paths = paths.cstrs();
		o.dry_run = dry_run;
		o.agent_only = agent_only;
		o.cancel = cancel.get();
		o.payload = this;
		o.plan = [](void *p, const char *path, decree_action a) {
			static_cast<RestoreState *>(p)->plan.push_back(
				{ nz(path), decree_action_name(a),
				  std::nullopt });
		};
		return o;
	}

	Napi::Value js(Napi::Env env) const
	{
		Napi::Object o = Napi::Object::New(env);
		o.Set("dryRun", dry_run);
		o.Set("created", js_num(env, (double)res.created));
		o.Set("restored", js_num(env, (double)res.restored));
		o.Set("deleted", js_num(env, (double)res.deleted));
		o.Set("skippedUserEdits",
		      js_num(env, (double)res.skipped_user_edits));
		o.Set("preCheckpoint",
		      res.pre_checkpoint[0] ? Napi::Value(Napi::String::New(
						      env, res.pre_checkpoint))
					    : env.Null());
		o.Set("plan", js_path_actions(env, plan));
		o.Set("notices", js_notices(env, notices));
		return o;
	}
};

std::shared_ptr<RestoreState> restore_state(Napi::Object o, bool agent_only)
{
	auto st = std::make_shared<RestoreState>();
	st->paths = opt_strs(o, "paths");
	st->dry_run = opt_bool(o, "dryRun");
	st->agent_only = agent_only && opt_bool(o, "agentOnly");
	st->cancel = opt_cancel(o);
	return st;
}

// --- the store ---------------------------------------------------------------

class NativeStore : public Napi::ObjectWrap<NativeStore>
{
      public:
	explicit NativeStore(const Napi::CallbackInfo &info)
	    : Napi::ObjectWrap<NativeStore>(info)
	{
	}

	~NativeStore() override
	{
		// Finalized only when no call is running: every Job holds a
		// reference to the object until it has settled.
		decree_store_free(s_);
	}

	static Napi::Function Init(Napi::Env env);

      private:
	decree_store *s_ = nullptr;
	std::atomic<bool> busy_{ false };

	// Claim the handle for one call (on the main thread).
	decree_store *claim(Napi::Env env, bool need_open = true)
	{
		if (need_open && !s_)
			throw_decree(env, DECREE_EINVALID,
				     "the store is closed");
		bool expected = false;
		if (!busy_.compare_exchange_strong(expected, true))
			throw_decree(env, DECREE_EINVALID,
				     "the store is busy with another call "
				     "(calls of one Store are queued by "
				     "index.js)");
		return s_;
	}

	Napi::Value start(Napi::Env env, Job::Work work, Job::Done done,
			  Job::Decorate decorate = nullptr)
	{
		Job *j = new Job(env, Value(), &busy_, std::move(work),
				 std::move(done), std::move(decorate));
		return j->Start();
	}

	// Claims the handle, and gives it back if reading the arguments
	// throws before the job is queued.
	template <typename F>
	Napi::Value call(const Napi::CallbackInfo &info, F body,
			 bool need_open = true)
	{
		decree_store *s = claim(info.Env(), need_open);
		try {
			return body(s);
		} catch (...) {
			busy_.store(false);
			throw;
		}
	}

	Napi::Value Open(const Napi::CallbackInfo &info);
	Napi::Value Close(const Napi::CallbackInfo &info);
	Napi::Value Create(const Napi::CallbackInfo &info);
	Napi::Value List(const Napi::CallbackInfo &info);
	Napi::Value Resolve(const Napi::CallbackInfo &info);
	Napi::Value Show(const Napi::CallbackInfo &info);
	Napi::Value Diff(const Napi::CallbackInfo &info);
	Napi::Value Compare(const Napi::CallbackInfo &info);
	Napi::Value Restore(const Napi::CallbackInfo &info);
	Napi::Value Rollback(const Napi::CallbackInfo &info);
	Napi::Value RollbackList(const Napi::CallbackInfo &info);
	Napi::Value UndoRedo(const Napi::CallbackInfo &info);
	Napi::Value DropDamagedHistory(const Napi::CallbackInfo &info);
	Napi::Value Prune(const Napi::CallbackInfo &info);
	Napi::Value Drop(const Napi::CallbackInfo &info);
	Napi::Value Delete(const Napi::CallbackInfo &info);
	Napi::Value Apply(const Napi::CallbackInfo &info);
	Napi::Value Gc(const Napi::CallbackInfo &info);
	Napi::Value Fsck(const Napi::CallbackInfo &info);
	Napi::Value Recover(const Napi::CallbackInfo &info);
	Napi::Value AgentTurn(const Napi::CallbackInfo &info);
	Napi::Value AgentToolStart(const Napi::CallbackInfo &info);
	Napi::Value AgentRecordPaths(const Napi::CallbackInfo &info);
	Napi::Value AgentRecordScan(const Napi::CallbackInfo &info);
	Napi::Value AgentSessions(const Napi::CallbackInfo &info);
	Napi::Value RewindList(const Napi::CallbackInfo &info);
	Napi::Value Rewind(const Napi::CallbackInfo &info);
	// Workspaces (include/decree/workspace.h)
	Napi::Value WorkspaceCreate(const Napi::CallbackInfo &info);
	Napi::Value WorkspaceList(const Napi::CallbackInfo &info);
	Napi::Value WorkspaceGet(const Napi::CallbackInfo &info);
	Napi::Value WorkspaceDiff(const Napi::CallbackInfo &info);
	Napi::Value WorkspaceConflicts(const Napi::CallbackInfo &info);
	Napi::Value WorkspaceApply(const Napi::CallbackInfo &info);
	Napi::Value WorkspaceDiscard(const Napi::CallbackInfo &info);
};

std::string arg_str(const Napi::CallbackInfo &info, size_t i, const char *what)
{
	if (info.Length() <= i)
		throw Napi::TypeError::New(info.Env(),
					   std::string(what) + " is required");
	return str_value(info.Env(), info[i], what);
}

std::optional<std::string> arg_opt_str(const Napi::CallbackInfo &info, size_t i,
				       const char *what)
{
	if (info.Length() <= i || absent(info[i]))
		return std::nullopt;
	return str_value(info.Env(), info[i], what);
}

const char *c_str(const std::optional<std::string> &s)
{
	return s ? s->c_str() : nullptr;
}

// open({root, store, maxFileSize, excludes, lockTimeoutMs, threads,
//       missingRoot, config}) -> {root, storePath}
Napi::Value NativeStore::Open(const Napi::CallbackInfo &info)
{
	if (s_)
		throw_decree(info.Env(), DECREE_EINVALID,
			     "the store is already open");
	return call(
		info,
		[&](decree_store *) {
			struct St {
				std::string root;
				std::optional<std::string> store;
				StrList excludes;
				uint64_t max_file_size;
				int lock_timeout_ms;
				unsigned threads;
				bool missing_root, config;
				decree_store *out = nullptr;
				std::string root_out, path_out;
			};
			auto st = std::make_shared<St>();
			Napi::Object o = opts_arg(info, 0);
			Napi::Value root = o.Get("root");
			if (absent(root))
				throw Napi::TypeError::New(info.Env(),
							   "root is required");
			st->root = str_value(info.Env(), root, "root");
			st->store = opt_str(o, "store");
			st->excludes = opt_strs(o, "excludes");
			st->max_file_size = opt_u64(o, "maxFileSize", 0);
			Napi::Value t = o.Get("lockTimeoutMs");
			st->lock_timeout_ms =
				absent(t) ? -1
					  : (int)std::min<uint64_t>(
						    opt_u64(o, "lockTimeoutMs",
							    0),
						    2147483647);
			st->threads = (unsigned)std::min<uint64_t>(
				opt_u64(o, "threads", 0), 1024);
			st->missing_root = opt_bool(o, "missingRoot");
			Napi::Value cfg = o.Get("config");
			st->config = absent(cfg) || opt_bool(o, "config");
			return start(
				info.Env(),
				[st]() {
					decree_store_options so =
						DECREE_STORE_OPTIONS_INIT;
					decree_config *c = nullptr;
					int r;
					// as the program does: the project's
					// .decree/config.yml decides the
					// store, its limit and excludes,
					// unless the caller says otherwise
					if (st->config && !st->missing_root) {
						if ((r = decree_config_load(
							     &c,
							     st->root.c_str())) <
						    0)
							return r;
						decree_config_store_options(
							&so, c,
							st->root.c_str());
					}
					so.root = st->root.c_str();
					if (st->store)
						so.store_path =
							st->store->c_str();
					if (st->max_file_size)
						so.max_file_size =
							st->max_file_size;
					if (st->excludes.set)
						so.excludes =
							st->excludes.cstrs();
					so.lock_timeout_ms =
						st->lock_timeout_ms;
					so.threads = st->threads;
					if (st->missing_root)
						so.flags |=
							DECREE_STORE_MISSING_ROOT;
					r = decree_store_open(&st->out, &so);
					decree_config_free(c);
					if (r < 0)
						return r;
					st->root_out =
						decree_store_root(st->out);
					st->path_out =
						decree_store_path(st->out);
					return 0;
				},
				[this, st](Napi::Env env) {
					s_ = st->out;
					st->out = nullptr;
					Napi::Object r = Napi::Object::New(env);
					r.Set("root", st->root_out);
					r.Set("storePath", st->path_out);
					return r;
				});
		},
		false);
}

Napi::Value NativeStore::Close(const Napi::CallbackInfo &info)
{
	if (!s_) {
		auto d = Napi::Promise::Deferred::New(info.Env());
		d.Resolve(info.Env().Undefined());
		return d.Promise();
	}
	return call(info, [&](decree_store *s) {
		s_ = nullptr; // no call starts after close()
		return start(
			info.Env(),
			[s]() {
				decree_store_free(s);
				return 0;
			},
			[](Napi::Env env) { return env.Undefined(); });
	});
}

// create({session, message, label, ifChanged, excludes, maxFileSize})
Napi::Value NativeStore::Create(const Napi::CallbackInfo &info)
{
	return call(info, [&](decree_store *s) {
		struct St {
			std::optional<std::string> session, message, label;
			bool if_changed;
			StrList excludes;
			uint64_t max_file_size;
			decree_checkpoint_created out{};
			std::vector<Notice> notices;
		};
		auto st = std::make_shared<St>();
		Napi::Object o = opts_arg(info, 0);
		st->session = opt_str(o, "session");
		st->message = opt_str(o, "message");
		st->label = opt_str(o, "label");
		st->if_changed = opt_bool(o, "ifChanged");
		st->excludes = opt_strs(o, "excludes");
		st->max_file_size = opt_u64(o, "maxFileSize", 0);
		return start(
			info.Env(),
			[s, st]() {
				decree_checkpoint_create_options co =
					DECREE_CHECKPOINT_CREATE_OPTIONS_INIT;
				co.session = c_str(st->session);
				co.message = c_str(st->message);
				co.label = c_str(st->label);
				co.if_changed = st->if_changed;
				co.excludes = st->excludes.cstrs();
				co.max_file_size = st->max_file_size;
				int r = decree_checkpoint_create_ext(&st->out,
								     s, &co);
				st->notices = copy_notices(s);
				return r;
			},
			[st](Napi::Env env) {
				Napi::Object r = Napi::Object::New(env);
				r.Set("id", st->out.id);
				r.Set("tree", st->out.tree);
				r.Set("created", st->out.created);
				r.Set("filesChanged",
				      count_or_null(env,
						    st->out.files_changed));
				r.Set("insertions",
				      count_or_null(env, st->out.insertions));
				r.Set("deletions",
				      count_or_null(env, st->out.deletions));
				r.Set("notices", js_notices(env, st->notices));
				return r;
			});
	});
}

struct Damaged {
	std::string id, problem;
	bool damaged, removed;
};

std::vector<Damaged> copy_damaged(const decree_store *s)
{
	std::vector<Damaged> v;
	for (size_t k = 0; k < decree_checkpoint_damaged_count(s); k++) {
		const decree_damaged_record *d =
			decree_checkpoint_damaged_at(s, k);
		if (d)
			v.push_back({ d->id, nz(d->problem), d->damaged,
				      d->removed });
	}
	return v;
}

Napi::Array js_damaged(Napi::Env env, const std::vector<Damaged> &v)
{
	Napi::Array a = Napi::Array::New(env, v.size());
	for (size_t k = 0; k < v.size(); k++) {
		Napi::Object o = Napi::Object::New(env);
		o.Set("id", v[k].id);
		o.Set("problem", v[k].problem);
		o.Set("damaged", v[k].damaged);
		o.Set("removed", v[k].removed);
		a.Set((uint32_t)k, o);
	}
	return a;
}

// list({session, hasChanges}) -> {checkpoints, damaged}
Napi::Value NativeStore::List(const Napi::CallbackInfo &info)
{
	return call(info, [&](decree_store *s) {
		struct St {
			std::optional<std::string> session;
			bool has_changes;
			std::vector<Info> list;
			std::vector<Damaged> damaged;
		};
		auto st = std::make_shared<St>();
		Napi::Object o = opts_arg(info, 0);
		st->session = opt_str(o, "session");
		Napi::Value hc = o.Get("hasChanges");
		st->has_changes = absent(hc) || opt_bool(o, "hasChanges");
		return start(
			info.Env(),
			[s, st]() {
				decree_checkpoint_list *l;
				int r = decree_checkpoint_list_get(
					&l, s, c_str(st->session),
					st->has_changes
						? DECREE_LIST_HAS_CHANGES
						: 0);
				st->damaged = copy_damaged(s);
				if (r < 0)
					return r;
				for (size_t k = 0;
				     k < decree_checkpoint_list_count(l); k++)
					st->list.push_back(copy_info(
						decree_checkpoint_list_at(l,
									  k)));
				decree_checkpoint_list_free(l);
				return 0;
			},
			[st](Napi::Env env) {
				Napi::Object r = Napi::Object::New(env);
				Napi::Array a =
					Napi::Array::New(env, st->list.size());
				for (size_t k = 0; k < st->list.size(); k++)
					a.Set((uint32_t)k,
					      js_info(env, st->list[k],
						      st->has_changes));
				r.Set("checkpoints", a);
				r.Set("damaged", js_damaged(env, st->damaged));
				return r;
			});
	});
}

Napi::Value NativeStore::Resolve(const Napi::CallbackInfo &info)
{
	return call(info, [&](decree_store *s) {
		auto ref =
			std::make_shared<std::string>(arg_str(info, 0, "ref"));
		auto id = std::make_shared<std::string>();
		return start(
			info.Env(),
			[s, ref, id]() {
				char out[DECREE_ID_HEXLEN + 1];
				int r = decree_checkpoint_resolve(out, s,
								  ref->c_str());
				if (r == 0)
					*id = out;
				return r;
			},
			[id](Napi::Env env) {
				return Napi::String::New(env, *id);
			});
	});
}

// show(ref) -> {checkpoint, files}
Napi::Value NativeStore::Show(const Napi::CallbackInfo &info)
{
	return call(info, [&](decree_store *s) {
		struct File {
			std::string path, sha256;
			uint64_t size;
			unsigned mode;
			std::optional<std::string> skip;
		};
		struct St {
			std::string ref;
			Info info;
			std::vector<File> files;
		};
		auto st = std::make_shared<St>();
		st->ref = arg_str(info, 0, "ref");
		return start(
			info.Env(),
			[s, st]() {
				decree_snapshot *snap;
				decree_checkpoint_info ci;
				int r = decree_checkpoint_show(&snap, &ci, s,
							       st->ref.c_str());
				if (r < 0)
					return r;
				st->info = copy_info(&ci);
				for (size_t k = 0;
				     k < decree_snapshot_count(snap); k++) {
					decree_file_info f;
					decree_snapshot_at(&f, snap, k);
					st->files.push_back(
						{ nz(f.path), f.sha256, f.size,
						  f.mode,
						  opt_of(f.skip_reason) });
				}
				decree_snapshot_free(snap);
				return 0;
			},
			[st](Napi::Env env) {
				Napi::Object r = Napi::Object::New(env);
				r.Set("checkpoint",
				      js_info(env, st->info, false));
				Napi::Array a =
					Napi::Array::New(env, st->files.size());
				for (size_t k = 0; k < st->files.size(); k++) {
					const File &f = st->files[k];
					Napi::Object o = Napi::Object::New(env);
					o.Set("path", f.path);
					o.Set("sha256",
					      f.sha256.empty()
						      ? env.Null()
						      : Napi::String::New(
								env, f.sha256));
					o.Set("size",
					      js_num(env, (double)f.size));
					o.Set("mode", js_num(env, f.mode));
					o.Set("skipReason",
					      js_opt(env, f.skip));
					a.Set((uint32_t)k, o);
				}
				r.Set("files", a);
				return r;
			});
	});
}

// One diff record (decree_diff_file), copied.
struct DiffRecord {
	std::string path;
	char status;
	unsigned old_mode, new_mode;
	bool binary, skipped;
	uint64_t added, removed;
	std::optional<std::string> text;
};

int collect_diff(void *p, const decree_diff_file *f)
{
	static_cast<std::vector<DiffRecord> *>(p)->push_back(
		{ nz(f->path), f->status, f->old_mode, f->new_mode, f->binary,
		  f->skipped, f->added, f->removed,
		  f->text ? std::optional<std::string>(
				    std::string(f->text, f->len))
			  : std::nullopt });
	return 0;
}

Napi::Array js_diff(Napi::Env env, const std::vector<DiffRecord> &files)
{
	Napi::Array a = Napi::Array::New(env, files.size());
	for (size_t k = 0; k < files.size(); k++) {
		const DiffRecord &f = files[k];
		Napi::Object o = Napi::Object::New(env);
		o.Set("path", f.path);
		o.Set("status", std::string(1, f.status));
		o.Set("oldMode", js_num(env, f.old_mode));
		o.Set("newMode", js_num(env, f.new_mode));
		o.Set("binary", f.binary);
		o.Set("skipped", f.skipped);
		o.Set("added", js_num(env, (double)f.added));
		o.Set("removed", js_num(env, (double)f.removed));
		o.Set("text", js_opt(env, f.text));
		a.Set((uint32_t)k, o);
	}
	return a;
}

// {context, noText, paths} of a diff call.
struct DiffSpec {
	unsigned context = 3;
	bool no_text = false;
	StrList paths;

	decree_diff_options options()
	{
		decree_diff_options d = DECREE_DIFF_OPTIONS_INIT;
		d.context = context;
		d.no_text = no_text;
		d.paths = paths.cstrs();
		return d;
	}
};

DiffSpec diff_spec(Napi::Object o)
{
	DiffSpec d;
	d.context = (unsigned)std::min<uint64_t>(opt_u64(o, "context", 3),
						 1u << 20);
	d.no_text = opt_bool(o, "noText");
	d.paths = opt_strs(o, "paths");
	return d;
}

// diff(ref, ref2, {context, noText, paths}) -> [file]
Napi::Value NativeStore::Diff(const Napi::CallbackInfo &info)
{
	return call(info, [&](decree_store *s) {
		struct St {
			std::string ref;
			std::optional<std::string> ref2;
			DiffSpec spec;
			std::vector<DiffRecord> files;
		};
		auto st = std::make_shared<St>();
		st->ref = arg_str(info, 0, "ref");
		st->ref2 = arg_opt_str(info, 1, "ref2");
		st->spec = diff_spec(opts_arg(info, 2));
		return start(
			info.Env(),
			[s, st]() {
				decree_diff_options d = st->spec.options();
				return decree_checkpoint_diff(
					s, st->ref.c_str(), c_str(st->ref2), &d,
					collect_diff, &st->files);
			},
			[st](Napi::Env env) {
				return js_diff(env, st->files);
			});
	});
}

struct Change {
	std::string path;
	char status;
};

int collect_change(void *p, const char *path, char status)
{
	static_cast<std::vector<Change> *>(p)->push_back({ nz(path), status });
	return 0;
}

// compare(ref, ref2) -> [{path, status}]
Napi::Value NativeStore::Compare(const Napi::CallbackInfo &info)
{
	return call(info, [&](decree_store *s) {
		struct St {
			std::string ref;
			std::optional<std::string> ref2;
			std::vector<Change> changes;
		};
		auto st = std::make_shared<St>();
		st->ref = arg_str(info, 0, "ref");
		st->ref2 = arg_opt_str(info, 1, "ref2");
		return start(
			info.Env(),
			[s, st]() {
				return decree_checkpoint_compare(
					s, st->ref.c_str(), c_str(st->ref2),
					collect_change, &st->changes);
			},
			[st](Napi::Env env) {
				Napi::Array a = Napi::Array::New(
					env, st->changes.size());
				for (size_t k = 0; k < st->changes.size();
				     k++) {
					Napi::Object o = Napi::Object::New(env);
					o.Set("path", st->changes[k].path);
					o.Set("status",
					      std::string(
						      1,
						      st->changes[k].status));
					a.Set((uint32_t)k, o);
				}
				return a;
			});
	});
}

// restore(ref, {paths, dryRun, agentOnly, cancel})
Napi::Value NativeStore::Restore(const Napi::CallbackInfo &info)
{
	return call(info, [&](decree_store *s) {
		auto ref =
			std::make_shared<std::string>(arg_str(info, 0, "ref"));
		auto st = restore_state(opts_arg(info, 1), true);
		return start(
			info.Env(),
			[s, st, ref]() {
				decree_restore_options o = st->options();
				int r = decree_checkpoint_restore(
					&st->res, s, ref->c_str(), &o);
				st->notices = copy_notices(s);
				return r;
			},
			[st](Napi::Env env) { return st->js(env); });
	});
}

// The numbering of `decree rollback`: the checkpoints the user made are
// 1, 2, ... from the newest, decree's captures u1, u2, ... apart.
std::vector<std::string> rollback_refs(const decree_checkpoint_list *l)
{
	size_t n = decree_checkpoint_list_count(l), user = 0, captures = 0;
	std::vector<std::string> refs(n);
	for (size_t k = n; k-- > 0;) {
		if (decree_checkpoint_is_capture(
			    decree_checkpoint_list_at(l, k)))
			refs[k] = "u" + std::to_string(++captures);
		else
			refs[k] = std::to_string(++user);
	}
	return refs;
}

// rollbackList({session}) -> newest first, numbered, with filesDiffer
Napi::Value NativeStore::RollbackList(const Napi::CallbackInfo &info)
{
	return call(info, [&](decree_store *s) {
		struct Entry {
			Info info;
			std::string ref;
			size_t differ;
		};
		struct St {
			std::optional<std::string> session;
			std::vector<Entry> entries;
		};
		auto st = std::make_shared<St>();
		st->session = opt_str(opts_arg(info, 0), "session");
		return start(
			info.Env(),
			[s, st]() {
				decree_checkpoint_list *l;
				int r = decree_checkpoint_list_get(
					&l, s, c_str(st->session), 0);
				if (r < 0)
					return r;
				std::vector<std::string> refs =
					rollback_refs(l);
				size_t n = decree_checkpoint_list_count(l);
				for (size_t k = n; k-- > 0;) {
					const decree_checkpoint_info *c =
						decree_checkpoint_list_at(l, k);
					std::vector<Change> ch;
					r = decree_checkpoint_compare(
						s, c->id, nullptr,
						collect_change, &ch);
					if (r < 0)
						break;
					st->entries.push_back({ copy_info(c),
								refs[k],
								ch.size() });
				}
				decree_checkpoint_list_free(l);
				return r < 0 ? r : 0;
			},
			[st](Napi::Env env) {
				Napi::Array a = Napi::Array::New(
					env, st->entries.size());
				for (size_t k = 0; k < st->entries.size();
				     k++) {
					const Entry &e = st->entries[k];
					bool cap = e.ref[0] == 'u';
					Napi::Object o =
						js_info(env, e.info, false);
					o.Set("n",
					      cap ? env.Null()
						  : js_num(env,
							   std::stod(e.ref)));
					o.Set("kind",
					      cap ? "capture" : "checkpoint");
					o.Set("ref", e.ref);
					o.Set("filesDiffer",
					      js_num(env, (double)e.differ));
					a.Set((uint32_t)k, o);
				}
				return a;
			});
	});
}

// rollback(ref "N" | "uN", {session, paths, dryRun, cancel})
Napi::Value NativeStore::Rollback(const Napi::CallbackInfo &info)
{
	return call(info, [&](decree_store *s) {
		auto want =
			std::make_shared<std::string>(arg_str(info, 0, "n"));
		Napi::Object o = opts_arg(info, 1);
		auto session = std::make_shared<std::optional<std::string>>(
			opt_str(o, "session"));
		auto st = restore_state(o, false);
		return start(
			info.Env(),
			[s, st, want, session]() {
				decree_checkpoint_list *l;
				int r = decree_checkpoint_list_get(
					&l, s, c_str(*session), 0);
				if (r < 0)
					return r;
				std::vector<std::string> refs =
					rollback_refs(l);
				std::string id;
				size_t have = 0;
				bool cap = (*want)[0] == 'u';
				for (size_t k = 0; k < refs.size(); k++) {
					if (refs[k] == *want)
						id = decree_checkpoint_list_at(
							     l, k)
							     ->id;
					have += (refs[k][0] == 'u') == cap;
				}
				decree_checkpoint_list_free(l);
				if (id.empty()) {
					// the message decree rollback gives
					std::string m =
						(cap ? "no capture "
						     : "no checkpoint number ") +
						*want + " (there are " +
						std::to_string(have) + ")";
					addon_error = m;
					return (int)DECREE_ENOTFOUND;
				}
				decree_restore_options ro = st->options();
				r = decree_checkpoint_restore(&st->res, s,
							      id.c_str(), &ro);
				st->notices = copy_notices(s);
				return r;
			},
			[st](Napi::Env env) { return st->js(env); });
	});
}

Napi::Value NativeStore::UndoRedo(const Napi::CallbackInfo &info)
{
	return call(info, [&](decree_store *s) {
		bool undo = info.Length() > 0 && info[0].IsBoolean() &&
			    info[0].As<Napi::Boolean>().Value();
		auto st = restore_state(opts_arg(info, 1), false);
		return start(
			info.Env(),
			[s, st, undo]() {
				decree_restore_options o = st->options();
				int r = undo ? decree_undo(&st->res, s, &o)
					     : decree_redo(&st->res, s, &o);
				st->notices = copy_notices(s);
				return r;
			},
			[st](Napi::Env env) { return st->js(env); });
	});
}

Napi::Value NativeStore::DropDamagedHistory(const Napi::CallbackInfo &info)
{
	return call(info, [&](decree_store *s) {
		auto n = std::make_shared<size_t>(0);
		return start(
			info.Env(),
			[s, n]() {
				return decree_history_drop_damaged(n.get(), s);
			},
			[n](Napi::Env env) {
				Napi::Object r = Napi::Object::New(env);
				r.Set("dropped", js_num(env, (double)*n));
				return r;
			});
	});
}

// prune({session, keep, olderThanDays}) -> {removed}
Napi::Value NativeStore::Prune(const Napi::CallbackInfo &info)
{
	return call(info, [&](decree_store *s) {
		Napi::Object o = opts_arg(info, 0);
		auto session = std::make_shared<std::optional<std::string>>(
			opt_str(o, "session"));
		long keep = (long)std::min<uint64_t>(opt_u64(o, "keep", 0),
						     1L << 40);
		long older = absent(o.Get("olderThanDays"))
				     ? -1
				     : (long)std::min<uint64_t>(
					       opt_u64(o, "olderThanDays", 0),
					       1L << 40);
		auto n = std::make_shared<size_t>(0);
		return start(
			info.Env(),
			[s, session, keep, older, n]() {
				return decree_checkpoint_prune(n.get(), s,
							       c_str(*session),
							       keep, older);
			},
			[n](Napi::Env env) {
				Napi::Object r = Napi::Object::New(env);
				r.Set("removed", js_num(env, (double)*n));
				return r;
			});
	});
}

// drop(session | null = everything) -> {removed}
Napi::Value NativeStore::Drop(const Napi::CallbackInfo &info)
{
	return call(info, [&](decree_store *s) {
		auto session = std::make_shared<std::optional<std::string>>(
			arg_opt_str(info, 0, "session"));
		auto n = std::make_shared<size_t>(0);
		return start(
			info.Env(),
			[s, session, n]() {
				return decree_checkpoint_drop(n.get(), s,
							      c_str(*session));
			},
			[n](Napi::Env env) {
				Napi::Object r = Napi::Object::New(env);
				r.Set("removed", js_num(env, (double)*n));
				return r;
			});
	});
}

Napi::Value NativeStore::Delete(const Napi::CallbackInfo &info)
{
	return call(info, [&](decree_store *s) {
		auto ref =
			std::make_shared<std::string>(arg_str(info, 0, "ref"));
		return start(
			info.Env(),
			[s, ref]() {
				return decree_checkpoint_delete(s,
								ref->c_str());
			},
			[](Napi::Env env) { return Napi::Object::New(env); });
	});
}

// What an apply-engine call (decree_apply, decree_workspace_apply) takes
// and gives back: the options, the per-path report, the counts, and the
// fields a failure's DecreeError carries.
struct ApplyState {
	bool check = false, reverse = false;
	int strip = -1;
	std::optional<std::string> exec, session;
	std::shared_ptr<volatile int> cancel;
	decree_apply_result res{};
	std::vector<PathAction> files;

	void read(Napi::Object o, bool patch_options)
	{
		check = opt_bool(o, "check");
		if (patch_options) {
			reverse = opt_bool(o, "reverse");
			Napi::Value sv = o.Get("strip");
			strip = absent(sv)
					? -1
					: (int)std::min<uint64_t>(
						  opt_u64(o, "strip", 0), 64);
		}
		exec = opt_str(o, "exec");
		session = opt_str(o, "session");
		cancel = opt_cancel(o);
	}

	decree_apply_options options()
	{
		decree_apply_options ao = DECREE_APPLY_OPTIONS_INIT;
		ao.check_only = check;
		ao.reverse = reverse;
		ao.strip = strip;
		ao.exec = c_str(exec);
		ao.exec_stdout_to_stderr = false;
		ao.session = c_str(session);
		ao.cancel = cancel.get();
		ao.payload = this;
		ao.report = [](void *p, const char *path, decree_apply_action a,
			       const char *detail) {
			static_cast<ApplyState *>(p)->files.push_back(
				{ nz(path), decree_apply_action_name(a),
				  opt_of(detail) });
		};
		return ao;
	}

	Napi::Value js(Napi::Env e) const
	{
		const decree_apply_result &a = res;
		Napi::Object r = Napi::Object::New(e);
		r.Set("check", check);
		r.Set("created", js_num(e, (double)a.created));
		r.Set("modified", js_num(e, (double)a.modified));
		r.Set("deleted", js_num(e, (double)a.deleted));
		r.Set("skipped", js_num(e, (double)a.skipped));
		r.Set("conflicts", js_num(e, (double)a.conflicts));
		r.Set("execRan", a.exec_ran);
		r.Set("execStatus", js_num(e, a.exec_status));
		r.Set("files", js_path_actions(e, files));
		return r;
	}

	void decorate(Napi::Env e, Napi::Object err) const
	{
		const decree_apply_result &a = res;
		err.Set("files", js_path_actions(e, files));
		if (a.exec_ran) {
			err.Set("execStatus", js_num(e, a.exec_status));
			err.Set("restored", js_num(e, (double)a.restored));
			err.Set("removed", js_num(e, (double)a.removed));
			err.Set("swept", js_num(e, (double)a.swept));
			err.Set("execCheckpoint",
				a.exec_checkpoint[0]
					? Napi::Value(Napi::String::New(
						  e, a.exec_checkpoint))
					: e.Null());
		}
	}
};

// apply(patch: string | Uint8Array, {check, reverse, strip, exec,
//       session, name, cancel})
Napi::Value NativeStore::Apply(const Napi::CallbackInfo &info)
{
	return call(info, [&](decree_store *s) {
		struct St : ApplyState {
			std::string text, name;
		};
		Napi::Env env = info.Env();
		auto st = std::make_shared<St>();
		if (info.Length() < 1)
			throw Napi::TypeError::New(env, "patch is required");
		if (info[0].IsString())
			st->text = info[0].As<Napi::String>().Utf8Value();
		else if (info[0].IsTypedArray() &&
			 info[0].As<Napi::TypedArray>().TypedArrayType() ==
				 napi_uint8_array) {
			Napi::Uint8Array a = info[0].As<Napi::Uint8Array>();
			st->text.assign((const char *)a.Data(), a.ByteLength());
		} else
			throw Napi::TypeError::New(
				env, "patch must be a string or a Uint8Array");
		Napi::Object o = opts_arg(info, 1);
		st->name = opt_str(o, "name").value_or("<patch>");
		st->read(o, true);
		return start(
			env,
			[s, st]() {
				decree_apply_options ao = st->options();
				return decree_apply(&st->res, s,
						    st->name.c_str(),
						    st->text.data(),
						    st->text.size(), &ao);
			},
			[st](Napi::Env e) { return st->js(e); },
			[st](Napi::Env e, Napi::Object err) {
				st->decorate(e, err);
			});
	});
}

Napi::Value NativeStore::Gc(const Napi::CallbackInfo &info)
{
	return call(info, [&](decree_store *s) {
		bool dry = opt_bool(opts_arg(info, 0), "dryRun");
		auto st = std::make_shared<decree_gc_stats>();
		return start(
			info.Env(),
			[s, st, dry]() { return decree_gc(st.get(), s, dry); },
			[st, dry](Napi::Env env) {
				Napi::Object r = Napi::Object::New(env);
				r.Set("dryRun", dry);
				r.Set("objectsFreed",
				      js_num(env, (double)st->objects_freed));
				r.Set("bytesFreed",
				      js_num(env, (double)st->bytes_freed));
				r.Set("objectsKept",
				      js_num(env, (double)st->objects_kept));
				return r;
			});
	});
}

// fsck({repair}) -> {ok, problems: [{kind, object, detail}]}; a store
// with problems resolves (ok false): finding them is what fsck is for.
Napi::Value NativeStore::Fsck(const Napi::CallbackInfo &info)
{
	return call(info, [&](decree_store *s) {
		struct Problem {
			int kind;
			std::string what, detail;
		};
		struct St {
			bool repair;
			bool ok = true;
			std::vector<Problem> problems;
		};
		auto st = std::make_shared<St>();
		st->repair = opt_bool(opts_arg(info, 0), "repair");
		return start(
			info.Env(),
			[s, st]() {
				decree_fsck_options fo =
					DECREE_FSCK_OPTIONS_INIT;
				fo.flags = st->repair ? DECREE_FSCK_REPAIR : 0;
				fo.payload = st.get();
				fo.cb = [](void *p, decree_fsck_problem k,
					   const char *what,
					   const char *detail) {
					static_cast<St *>(p)->problems.push_back(
						{ (int)k, nz(what),
						  nz(detail) });
				};
				int r = decree_fsck_ext(s, &fo);
				if (r == DECREE_ECORRUPT) {
					st->ok = false;
					return 0;
				}
				return r;
			},
			[st](Napi::Env env) {
				Napi::Object r = Napi::Object::New(env);
				r.Set("ok", st->ok);
				Napi::Array a = Napi::Array::New(
					env, st->problems.size());
				for (size_t k = 0; k < st->problems.size();
				     k++) {
					const Problem &p = st->problems[k];
					Napi::Object o = Napi::Object::New(env);
					o.Set("kind",
					      decree_fsck_problem_name(
						      (decree_fsck_problem)
							      p.kind));
					o.Set("object", p.what);
					o.Set("detail", p.detail);
					a.Set((uint32_t)k, o);
				}
				r.Set("problems", a);
				return r;
			});
	});
}

Napi::Value NativeStore::Recover(const Napi::CallbackInfo &info)
{
	return call(info, [&](decree_store *s) {
		bool rollback = opt_bool(opts_arg(info, 0), "rollback");
		auto st = std::make_shared<decree_recover_result>();
		return start(
			info.Env(),
			[s, st, rollback]() {
				decree_recover_options ro =
					DECREE_RECOVER_OPTIONS_INIT;
				ro.rollback = rollback;
				return decree_recover_ext(st.get(), s, &ro);
			},
			[st](Napi::Env env) {
				Napi::Object r = Napi::Object::New(env);
				r.Set("recovered", st->recovered);
				r.Set("leftAlone",
				      js_num(env, (double)st->left_alone));
				return r;
			});
	});
}

// --- agent sessions
// ------------------------------------------------------------

// agentTurn({session, agent, message, prompt, ensure})
Napi::Value NativeStore::AgentTurn(const Napi::CallbackInfo &info)
{
	return call(info, [&](decree_store *s) {
		struct St {
			std::optional<std::string> session, agent, message,
				prompt;
			bool ensure;
			decree_turn_result out{};
		};
		auto st = std::make_shared<St>();
		Napi::Object o = opts_arg(info, 0);
		st->session = opt_str(o, "session");
		st->agent = opt_str(o, "agent");
		st->message = opt_str(o, "message");
		st->prompt = opt_str(o, "prompt");
		st->ensure = opt_bool(o, "ensure");
		return start(
			info.Env(),
			[s, st]() {
				decree_turn_options t =
					DECREE_TURN_OPTIONS_INIT;
				t.session = c_str(st->session);
				t.agent = c_str(st->agent);
				t.message = c_str(st->message);
				t.prompt = c_str(st->prompt);
				t.ensure = st->ensure;
				return decree_agent_turn(&st->out, s, &t);
			},
			[st](Napi::Env env) {
				Napi::Object r = Napi::Object::New(env);
				r.Set("turn", js_num(env, st->out.turn));
				r.Set("checkpoint", st->out.checkpoint);
				r.Set("started", st->out.started);
				return r;
			});
	});
}

// agentToolStart(session, tool, toolId)
Napi::Value NativeStore::AgentToolStart(const Napi::CallbackInfo &info)
{
	return call(info, [&](decree_store *s) {
		auto session = std::make_shared<std::string>(
			arg_str(info, 0, "session"));
		auto tool = std::make_shared<std::optional<std::string>>(
			arg_opt_str(info, 1, "tool"));
		auto id = std::make_shared<std::optional<std::string>>(
			arg_opt_str(info, 2, "toolId"));
		return start(
			info.Env(),
			[s, session, tool, id]() {
				return decree_agent_tool_start(s,
							       session->c_str(),
							       c_str(*tool),
							       c_str(*id));
			},
			[](Napi::Env env) { return Napi::Object::New(env); });
	});
}

// agentRecordPaths(session, tool, paths) -> {recorded}
Napi::Value NativeStore::AgentRecordPaths(const Napi::CallbackInfo &info)
{
	return call(info, [&](decree_store *s) {
		struct St {
			std::string session;
			std::optional<std::string> tool;
			StrList paths;
			size_t n = 0;
		};
		auto st = std::make_shared<St>();
		st->session = arg_str(info, 0, "session");
		st->tool = arg_opt_str(info, 1, "tool");
		Napi::Object holder = Napi::Object::New(info.Env());
		holder.Set("paths", info.Length() > 2 ? info[2]
						      : info.Env().Undefined());
		st->paths = opt_strs(holder, "paths");
		if (!st->paths.set)
			throw Napi::TypeError::New(info.Env(),
						   "paths is required");
		return start(
			info.Env(),
			[s, st]() {
				return decree_agent_record_paths(
					&st->n, s, st->session.c_str(),
					c_str(st->tool), st->paths.cstrs());
			},
			[st](Napi::Env env) {
				Napi::Object r = Napi::Object::New(env);
				r.Set("recorded", js_num(env, (double)st->n));
				return r;
			});
	});
}

// agentRecordScan(session, tool, toolId) -> {changed}
Napi::Value NativeStore::AgentRecordScan(const Napi::CallbackInfo &info)
{
	return call(info, [&](decree_store *s) {
		struct St {
			std::string session;
			std::optional<std::string> tool, id;
			size_t n = 0;
		};
		auto st = std::make_shared<St>();
		st->session = arg_str(info, 0, "session");
		st->tool = arg_opt_str(info, 1, "tool");
		st->id = arg_opt_str(info, 2, "toolId");
		return start(
			info.Env(),
			[s, st]() {
				return decree_agent_record_scan(
					&st->n, s, st->session.c_str(),
					c_str(st->tool), c_str(st->id));
			},
			[st](Napi::Env env) {
				Napi::Object r = Napi::Object::New(env);
				r.Set("changed", js_num(env, (double)st->n));
				return r;
			});
	});
}

Napi::Value NativeStore::AgentSessions(const Napi::CallbackInfo &info)
{
	return call(info, [&](decree_store *s) {
		struct Sess {
			std::string session, last_at;
			std::optional<std::string> agent;
			size_t turns;
			int64_t last_ns;
		};
		auto st = std::make_shared<std::vector<Sess>>();
		return start(
			info.Env(),
			[s, st]() {
				decree_agent_sessions *l;
				int r = decree_agent_sessions_get(&l, s);
				if (r < 0)
					return r;
				for (size_t k = 0;
				     k < decree_agent_sessions_count(l); k++) {
					const decree_agent_session_info *i =
						decree_agent_sessions_at(l, k);
					st->push_back({ nz(i->session),
							i->last_at,
							opt_of(i->agent),
							i->turns, i->last_ns });
				}
				decree_agent_sessions_free(l);
				return 0;
			},
			[st](Napi::Env env) {
				Napi::Array a =
					Napi::Array::New(env, st->size());
				for (size_t k = 0; k < st->size(); k++) {
					const Sess &e = (*st)[k];
					Napi::Object o = Napi::Object::New(env);
					o.Set("session", e.session);
					o.Set("agent", js_opt(env, e.agent));
					o.Set("turns",
					      js_num(env, (double)e.turns));
					o.Set("lastAt", e.last_at);
					o.Set("lastNs",
					      Napi::BigInt::New(env,
								e.last_ns));
					a.Set((uint32_t)k, o);
				}
				return a;
			});
	});
}

// rewindList(session) -> {session, agent, damaged, turns}
Napi::Value NativeStore::RewindList(const Napi::CallbackInfo &info)
{
	return call(info, [&](decree_store *s) {
		struct Turn {
			unsigned turn;
			std::optional<std::string> message, prompt;
			std::string checkpoint, created_at;
			bool exists;
			int64_t created_ns;
			std::vector<std::string> files;
		};
		struct St {
			std::optional<std::string> want;
			std::string session;
			std::optional<std::string> agent;
			size_t damaged = 0;
			std::vector<Turn> turns;
		};
		auto st = std::make_shared<St>();
		st->want = arg_opt_str(info, 0, "session");
		return start(
			info.Env(),
			[s, st]() {
				decree_rewind_list *l;
				int r = decree_rewind_list_get(&l, s,
							       c_str(st->want));
				if (r < 0)
					return r;
				st->session = nz(decree_rewind_list_session(l));
				st->agent = opt_of(decree_rewind_list_agent(l));
				st->damaged = decree_rewind_list_damaged(l);
				for (size_t k = 0;
				     k < decree_rewind_list_count(l); k++) {
					const decree_turn_info *t =
						decree_rewind_list_at(l, k);
					Turn c{ t->turn,
						opt_of(t->message),
						opt_of(t->prompt),
						t->checkpoint,
						t->created_at,
						t->checkpoint_exists,
						t->created_ns,
						{} };
					for (size_t i = 0;
					     i < decree_rewind_list_file_count(
							 l, k);
					     i++)
						c.files.push_back(nz(
							decree_rewind_list_file(
								l, k, i)));
					st->turns.push_back(std::move(c));
				}
				decree_rewind_list_free(l);
				return 0;
			},
			[st](Napi::Env env) {
				Napi::Object r = Napi::Object::New(env);
				r.Set("session", st->session);
				r.Set("agent", js_opt(env, st->agent));
				r.Set("damaged",
				      js_num(env, (double)st->damaged));
				Napi::Array a =
					Napi::Array::New(env, st->turns.size());
				for (size_t k = 0; k < st->turns.size(); k++) {
					const Turn &t = st->turns[k];
					Napi::Object o = Napi::Object::New(env);
					o.Set("turn", js_num(env, t.turn));
					o.Set("message",
					      js_opt(env, t.message));
					o.Set("prompt", js_opt(env, t.prompt));
					o.Set("checkpoint", t.checkpoint);
					o.Set("checkpointExists", t.exists);
					o.Set("createdAt", t.created_at);
					o.Set("createdNs",
					      Napi::BigInt::New(env,
								t.created_ns));
					Napi::Array f = Napi::Array::New(
						env, t.files.size());
					for (size_t i = 0; i < t.files.size();
					     i++)
						f.Set((uint32_t)i, t.files[i]);
					o.Set("files", f);
					a.Set((uint32_t)k, o);
				}
				r.Set("turns", a);
				return r;
			});
	});
}

// rewind(turn, {session, agentOnly, dryRun, paths, cancel})
Napi::Value NativeStore::Rewind(const Napi::CallbackInfo &info)
{
	return call(info, [&](decree_store *s) {
		Napi::Object holder = Napi::Object::New(info.Env());
		holder.Set("turn", info.Length() > 0 ? info[0]
						     : info.Env().Undefined());
		uint64_t turn = opt_u64(holder, "turn", 0);
		if (turn < 1 || turn > 0xffffffffu)
			throw Napi::RangeError::New(info.Env(),
						    "turn must be >= 1");
		Napi::Object o = opts_arg(info, 1);
		auto session = std::make_shared<std::optional<std::string>>(
			opt_str(o, "session"));
		auto st = restore_state(o, true);
		return start(
			info.Env(),
			[s, st, session, turn]() {
				decree_restore_options ro = st->options();
				int r = decree_rewind(&st->res, s,
						      c_str(*session),
						      (unsigned)turn, &ro);
				st->notices = copy_notices(s);
				return r;
			},
			[st](Napi::Env env) { return st->js(env); });
	});
}

// --- workspaces (include/decree/workspace.h, docs/workspaces.md)
// --------------------------------------------------------------

struct Workspace {
	std::string name, path, project, base, base_tree, mode;
	int64_t created_ns = 0;
	bool reflink_verified = false;
	decree_workspace_copy copy{};
};

Workspace copy_workspace(const decree_workspace_info *w)
{
	Workspace c;
	c.name = nz(w->name);
	c.path = nz(w->path);
	c.project = nz(w->project);
	c.base = w->base;
	c.base_tree = w->base_tree;
	c.mode = w->mode;
	c.created_ns = w->created_ns;
	c.reflink_verified = w->reflink_verified;
	c.copy = w->copy;
	return c;
}

Napi::Object js_workspace(Napi::Env env, const Workspace &w)
{
	Napi::Object o = Napi::Object::New(env);
	o.Set("name", w.name);
	o.Set("path", w.path);
	o.Set("project", w.project);
	o.Set("base", w.base);
	o.Set("baseTree", w.base_tree);
	o.Set("createdNs", Napi::BigInt::New(env, w.created_ns));
	o.Set("mode", w.mode);
	o.Set("reflinkVerified", w.reflink_verified);
	Napi::Object c = Napi::Object::New(env);
	c.Set("cloned", js_num(env, (double)w.copy.cloned));
	c.Set("copied", js_num(env, (double)w.copy.copied));
	c.Set("fromStore", js_num(env, (double)w.copy.from_store));
	c.Set("links", js_num(env, (double)w.copy.links));
	c.Set("dirs", js_num(env, (double)w.copy.dirs));
	c.Set("bytes", js_num(env, (double)w.copy.bytes));
	o.Set("copy", c);
	return o;
}

// workspaceCreate({name, from, noReflink}) -> workspace
Napi::Value NativeStore::WorkspaceCreate(const Napi::CallbackInfo &info)
{
	return call(info, [&](decree_store *s) {
		struct St {
			std::optional<std::string> name, from;
			bool no_reflink;
			Workspace out;
		};
		auto st = std::make_shared<St>();
		Napi::Object o = opts_arg(info, 0);
		st->name = opt_str(o, "name");
		st->from = opt_str(o, "from");
		st->no_reflink = opt_bool(o, "noReflink");
		return start(
			info.Env(),
			[s, st]() {
				decree_workspace_create_options co =
					DECREE_WORKSPACE_CREATE_OPTIONS_INIT;
				decree_workspace_info w;
				co.name = c_str(st->name);
				co.from = c_str(st->from);
				co.no_reflink = st->no_reflink;
				int r = decree_workspace_create(&w, s, &co);
				if (r < 0)
					return r;
				st->out = copy_workspace(&w);
				decree_workspace_info_release(&w);
				return 0;
			},
			[st](Napi::Env env) {
				return js_workspace(env, st->out);
			});
	});
}

// workspaceList() -> [workspace], by name
Napi::Value NativeStore::WorkspaceList(const Napi::CallbackInfo &info)
{
	return call(info, [&](decree_store *s) {
		auto st = std::make_shared<std::vector<Workspace>>();
		return start(
			info.Env(),
			[s, st]() {
				decree_workspace_info *v;
				size_t n;
				int r = decree_workspace_list(&v, &n, s);
				if (r < 0)
					return r;
				for (size_t k = 0; k < n; k++)
					st->push_back(copy_workspace(&v[k]));
				decree_workspace_list_free(v, n);
				return 0;
			},
			[st](Napi::Env env) {
				Napi::Array a =
					Napi::Array::New(env, st->size());
				for (size_t k = 0; k < st->size(); k++)
					a.Set((uint32_t)k,
					      js_workspace(env, (*st)[k]));
				return a;
			});
	});
}

// workspaceGet(name) -> workspace
Napi::Value NativeStore::WorkspaceGet(const Napi::CallbackInfo &info)
{
	return call(info, [&](decree_store *s) {
		struct St {
			std::string name;
			Workspace out;
		};
		auto st = std::make_shared<St>();
		st->name = arg_str(info, 0, "name");
		return start(
			info.Env(),
			[s, st]() {
				decree_workspace_info w;
				int r = decree_workspace_get(&w, s,
							     st->name.c_str());
				if (r < 0)
					return r;
				st->out = copy_workspace(&w);
				decree_workspace_info_release(&w);
				return 0;
			},
			[st](Napi::Env env) {
				return js_workspace(env, st->out);
			});
	});
}

// workspaceDiff(name, {context, noText, paths}) -> [file]
Napi::Value NativeStore::WorkspaceDiff(const Napi::CallbackInfo &info)
{
	return call(info, [&](decree_store *s) {
		struct St {
			std::string name;
			DiffSpec spec;
			std::vector<DiffRecord> files;
		};
		auto st = std::make_shared<St>();
		st->name = arg_str(info, 0, "name");
		st->spec = diff_spec(opts_arg(info, 1));
		return start(
			info.Env(),
			[s, st]() {
				decree_diff_options d = st->spec.options();
				return decree_workspace_diff(s,
							     st->name.c_str(),
							     &d, collect_diff,
							     &st->files);
			},
			[st](Napi::Env env) {
				return js_diff(env, st->files);
			});
	});
}

// workspaceConflicts(name) -> {clean, files, changes, conflicts, report}:
// an apply with check_only; conflicts resolve (they are the answer)
Napi::Value NativeStore::WorkspaceConflicts(const Napi::CallbackInfo &info)
{
	return call(info, [&](decree_store *s) {
		struct St : ApplyState {
			std::string name;
		};
		auto st = std::make_shared<St>();
		st->name = arg_str(info, 0, "name");
		st->check = true;
		return start(
			info.Env(),
			[s, st]() {
				decree_apply_options ao = st->options();
				int r = decree_workspace_apply(
					&st->res, s, st->name.c_str(), &ao);
				return r == DECREE_ECONFLICT ? 0 : r;
			},
			[st](Napi::Env env) {
				std::vector<PathAction> conflicts;
				for (const PathAction &p : st->files)
					if (p.action == std::string("conflict"))
						conflicts.push_back(p);
				const decree_apply_result &a = st->res;
				Napi::Object r = Napi::Object::New(env);
				r.Set("clean", conflicts.empty());
				r.Set("files",
				      js_num(env, (double)st->files.size()));
				r.Set("changes",
				      js_num(env,
					     (double)(a.created + a.modified +
						      a.deleted)));
				r.Set("conflicts",
				      js_path_actions(env, conflicts));
				r.Set("report",
				      js_path_actions(env, st->files));
				return r;
			});
	});
}

// workspaceApply(name, {check, exec, session, cancel}): as apply()
Napi::Value NativeStore::WorkspaceApply(const Napi::CallbackInfo &info)
{
	return call(info, [&](decree_store *s) {
		struct St : ApplyState {
			std::string name;
		};
		auto st = std::make_shared<St>();
		st->name = arg_str(info, 0, "name");
		st->read(opts_arg(info, 1), false);
		return start(
			info.Env(),
			[s, st]() {
				decree_apply_options ao = st->options();
				return decree_workspace_apply(
					&st->res, s, st->name.c_str(), &ao);
			},
			[st](Napi::Env e) { return st->js(e); },
			[st](Napi::Env e, Napi::Object err) {
				st->decorate(e, err);
			});
	});
}

// workspaceDiscard(name) -> {capture}
Napi::Value NativeStore::WorkspaceDiscard(const Napi::CallbackInfo &info)
{
	return call(info, [&](decree_store *s) {
		struct St {
			std::string name, id;
		};
		auto st = std::make_shared<St>();
		st->name = arg_str(info, 0, "name");
		return start(
			info.Env(),
			[s, st]() {
				char id[DECREE_ID_HEXLEN + 1] = "";
				int r = decree_workspace_discard(
					id, s, st->name.c_str());
				if (r == 0)
					st->id = id;
				return r;
			},
			[st](Napi::Env env) {
				Napi::Object r = Napi::Object::New(env);
				r.Set("capture", st->id);
				return r;
			});
	});
}

Napi::Function NativeStore::Init(Napi::Env env)
{
	return DefineClass(
		env, "NativeStore",
		{
			InstanceMethod("open", &NativeStore::Open),
			InstanceMethod("close", &NativeStore::Close),
			InstanceMethod("create", &NativeStore::Create),
			InstanceMethod("list", &NativeStore::List),
			InstanceMethod("resolve", &NativeStore::Resolve),
			InstanceMethod("show", &NativeStore::Show),
			InstanceMethod("diff", &NativeStore::Diff),
			InstanceMethod("compare", &NativeStore::Compare),
			InstanceMethod("restore", &NativeStore::Restore),
			InstanceMethod("rollbackList",
				       &NativeStore::RollbackList),
			InstanceMethod("rollback", &NativeStore::Rollback),
			InstanceMethod("undoRedo", &NativeStore::UndoRedo),
			InstanceMethod("dropDamagedHistory",
				       &NativeStore::DropDamagedHistory),
			InstanceMethod("prune", &NativeStore::Prune),
			InstanceMethod("drop", &NativeStore::Drop),
			InstanceMethod("delete", &NativeStore::Delete),
			InstanceMethod("apply", &NativeStore::Apply),
			InstanceMethod("gc", &NativeStore::Gc),
			InstanceMethod("fsck", &NativeStore::Fsck),
			InstanceMethod("recover", &NativeStore::Recover),
			InstanceMethod("agentTurn", &NativeStore::AgentTurn),
			InstanceMethod("agentToolStart",
				       &NativeStore::AgentToolStart),
			InstanceMethod("agentRecordPaths",
				       &NativeStore::AgentRecordPaths),
			InstanceMethod("agentRecordScan",
				       &NativeStore::AgentRecordScan),
			InstanceMethod("agentSessions",
				       &NativeStore::AgentSessions),
			InstanceMethod("rewindList", &NativeStore::RewindList),
			InstanceMethod("rewind", &NativeStore::Rewind),
			InstanceMethod("workspaceCreate",
				       &NativeStore::WorkspaceCreate),
			InstanceMethod("workspaceList",
				       &NativeStore::WorkspaceList),
			InstanceMethod("workspaceGet",
				       &NativeStore::WorkspaceGet),
			InstanceMethod("workspaceDiff",
				       &NativeStore::WorkspaceDiff),
			InstanceMethod("workspaceConflicts",
				       &NativeStore::WorkspaceConflicts),
			InstanceMethod("workspaceApply",
				       &NativeStore::WorkspaceApply),
			InstanceMethod("workspaceDiscard",
				       &NativeStore::WorkspaceDiscard),
		});
}

Napi::Value SetErrorClass(const Napi::CallbackInfo &info)
{
	if (info.Length() < 1 || !info[0].IsFunction())
		throw Napi::TypeError::New(info.Env(),
					   "setErrorClass takes a class");
	info.Env().GetInstanceData<AddonData>()->errorClass =
		Napi::Persistent(info[0].As<Napi::Function>());
	return info.Env().Undefined();
}

Napi::Value Version(const Napi::CallbackInfo &info)
{
	return Napi::String::New(info.Env(), decree_version());
}

Napi::Object InitAddon(Napi::Env env, Napi::Object exports)
{
	auto *d = new AddonData();
	env.SetInstanceData(d);
	Napi::Function store = NativeStore::Init(env);
	Napi::Function cancel = CancelFlag::Init(env);
	d->storeClass = Napi::Persistent(store);
	d->cancelClass = Napi::Persistent(cancel);
	exports.Set("NativeStore", store);
	exports.Set("CancelFlag", cancel);
	exports.Set("setErrorClass", Napi::Function::New(env, SetErrorClass));
	exports.Set("version", Napi::Function::New(env, Version));
	return exports;
}

} // namespace

NODE_API_MODULE(decree, InitAddon)
