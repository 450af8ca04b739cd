//! The program's signal handlers, run with the thread's events going to a buffer of their own.
//!
//! A handler may run instrumented code on the thread it interrupts, and the signal may arrive
//! in the middle of a probe: after the probe read the thread's buffer position, before it
//! wrote its event and the next position. Had the handler's events gone into the same buffer,
//! the probe would then write over the first of them and move the position back, losing them
//! or leaving the handler's `Enter` with the interrupted function's paths (an unreadable or a
//! wrong trace). So the runtime interposes `sigaction` and `signal` and installs its
//! [`wrapper`] in place of each handler the program sets. The wrapper hands the events before
//! the signal to the sink, gives the thread a fresh buffer for the handler's events, hands
//! those over when the handler returns, and puts the interrupted buffer back exactly as the
//! probe left it: the trace has the handler's events where the signal came, as a call from the
//! interrupted function ([`crate::enter_handler`], [`crate::leave_handler`]).
//!
//! A handler left by `siglongjmp` keeps its buffer as the thread's (its events are not lost);
//! the interrupted buffer is then not freed.

use libc::{c_int, c_void, sighandler_t, siginfo_t};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// Signal numbers are below this.
const SIGNALS: usize = 65;

/// Per signal: the program's handler (0: none, or its default or ignore) and whether it takes
/// three arguments (`SA_SIGINFO`).
static HANDLERS: [AtomicUsize; SIGNALS] = [const { AtomicUsize::new(0) }; SIGNALS];
static SIGINFO: [AtomicBool; SIGNALS] = [const { AtomicBool::new(false) }; SIGNALS];

type Sigaction = unsafe extern "C" fn(c_int, *const libc::sigaction, *mut libc::sigaction) -> c_int;

/// libc's `sigaction`, which the runtime's own handlers are installed with.
pub(crate) fn real_sigaction() -> Option<Sigaction> {
    static REAL: AtomicUsize = AtomicUsize::new(0);
    let mut f = REAL.load(Ordering::Relaxed);
    if f == 0 {
        // SAFETY: looking up a symbol by a NUL-terminated name.
        f = unsafe { libc::dlsym(libc::RTLD_NEXT, c"sigaction".as_ptr()) } as usize;
        REAL.store(f, Ordering::Relaxed);
    }
    // SAFETY: libc's `sigaction` has this signature.
    (f != 0).then(|| unsafe { std::mem::transmute::<usize, Sigaction>(f) })
}

/// Runs the program's handler of `sig` with the thread's events in a buffer of their own.
extern "C" fn wrapper(sig: c_int, info: *mut siginfo_t, context: *mut c_void) {
    let Some(i) = usize::try_from(sig).ok().filter(|&i| i < SIGNALS) else {
        return;
    };
    let handler = HANDLERS[i].load(Ordering::Acquire);
    if handler == 0 {
        return;
    }
    let interrupted = crate::enter_handler();
    // SAFETY: `handler` is the program's handler for `sig`, of the kind SA_SIGINFO says.
    unsafe {
        if SIGINFO[i].load(Ordering::Acquire) {
            let h: extern "C" fn(c_int, *mut siginfo_t, *mut c_void) = std::mem::transmute(handler);
            h(sig, info, context);
        } else {
            let h: extern "C" fn(c_int) = std::mem::transmute(handler);
            h(sig);
        }
    }
    crate::leave_handler(interrupted);
}

/// The wrapper's address, as a `sigaction` holds it.
fn wrapped_handler() -> usize {
    wrapper as extern "C" fn(c_int, *mut siginfo_t, *mut c_void) as usize
}

/// Says the program's handler where the kernel has the wrapper.
fn unwrap_old(old: *mut libc::sigaction, program: (usize, bool)) {
    // SAFETY: `old` is the caller's out-pointer, filled by libc.
    if let Some(old) = unsafe { old.as_mut() } {
        if old.sa_sigaction == wrapped_handler() {
            old.sa_sigaction = program.0;
            if !program.1 {
                old.sa_flags &= !libc::SA_SIGINFO;
            }
        }
    }
}

/// `sigaction` with the program's handler wrapped (see the module docs).
///
/// # Safety
/// As libc's.
#[no_mangle]
pub unsafe extern "C" fn sigaction(
    sig: c_int,
    act: *const libc::sigaction,
    old: *mut libc::sigaction,
) -> c_int {
    let Some(real) = real_sigaction() else {
        // SAFETY: setting errno.
        unsafe { *libc::__errno_location() = libc::ENOSYS };
        return -1;
    };
    let Some(i) = usize::try_from(sig).ok().filter(|&i| i < SIGNALS) else {
        // SAFETY: forwarded from the caller.
        return unsafe { real(sig, act, old) };
    };
    let program = (
        HANDLERS[i].load(Ordering::Acquire),
        SIGINFO[i].load(Ordering::Acquire),
    );
    // SAFETY: `act` is the caller's, null or valid.
    let Some(act) = (unsafe { act.as_ref() }) else {
        // SAFETY: forwarded from the caller.
        let r = unsafe { real(sig, act, old) };
        unwrap_old(old, program);
        return r;
    };
    let mut wrapped = *act;
    let handler = act.sa_sigaction;
    if handler != libc::SIG_DFL && handler != libc::SIG_IGN {
        SIGINFO[i].store(act.sa_flags & libc::SA_SIGINFO != 0, Ordering::Release);
        HANDLERS[i].store(handler, Ordering::Release);
        wrapped.sa_sigaction = wrapped_handler();
        wrapped.sa_flags |= libc::SA_SIGINFO;
    }
    // SAFETY: forwarded from the caller, with the wrapper as the handler.
    let r = unsafe { real(sig, &wrapped, old) };
    if r == 0 && wrapped.sa_sigaction != wrapped_handler() {
        HANDLERS[i].store(0, Ordering::Release);
    }
    unwrap_old(old, program);
    r
}

/// `signal` as glibc defines it (BSD semantics: the handler stays, interrupted calls restart),
/// through the wrapping [`sigaction`].
///
/// # Safety
/// As libc's.
#[no_mangle]
pub unsafe extern "C" fn signal(sig: c_int, handler: sighandler_t) -> sighandler_t {
    // SAFETY: plain structs initialized here.
    unsafe {
        let mut act: libc::sigaction = std::mem::zeroed();
        act.sa_sigaction = handler;
        libc::sigemptyset(&mut act.sa_mask);
        libc::sigaddset(&mut act.sa_mask, sig);
        act.sa_flags = libc::SA_RESTART;
        let mut old: libc::sigaction = std::mem::zeroed();
        if sigaction(sig, &act, &mut old) != 0 {
            return libc::SIG_ERR;
        }
        old.sa_sigaction
    }
}
