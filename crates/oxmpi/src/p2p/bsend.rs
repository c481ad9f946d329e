//! Buffered sends (`MPI_Bsend`): the message is copied into space the user attached, so the
//! call returns at once; the copy is sent like any other message and its space is reclaimed
//! when that send completes.

use super::engine::{Engine, SendMode};
use super::request::ReqId;
use super::wire::Envelope;
use crate::error::{Error, ErrorClass, Result};

/// Bookkeeping overhead charged per buffered message (`MPI_BSEND_OVERHEAD`, ABI value).
pub const BSEND_OVERHEAD: usize = 512;

/// The attached buffer's accounting and the copies in flight.
#[derive(Debug, Default)]
pub struct BsendBuffer {
    capacity: Option<usize>,
    used: usize,
    inflight: Vec<(ReqId, Box<[u8]>)>,
}

impl BsendBuffer {
    /// Attaches `bytes` of buffer space.
    pub fn attach(&mut self, bytes: usize) -> Result<()> {
        if self.capacity.is_some() {
            return Err(Error::new(
                ErrorClass::Buffer,
                "buffer_attach: a buffer is already attached",
            ));
        }
        self.capacity = Some(bytes);
        Ok(())
    }

    /// Whether copies are still being sent.
    pub fn busy(&self) -> bool {
        !self.inflight.is_empty()
    }

    /// Detaches the buffer once nothing is in flight; returns its size.
    pub fn detach(&mut self) -> Result<usize> {
        debug_assert!(self.inflight.is_empty());
        self.used = 0;
        self.capacity
            .take()
            .ok_or_else(|| Error::new(ErrorClass::Buffer, "buffer_detach: no buffer is attached"))
    }
}

impl Engine {
    /// Frees the space of buffered sends that have completed.
    pub fn reclaim_bsend(&mut self) {
        let mut b = std::mem::take(&mut self.bsend);
        b.inflight.retain(|(id, data)| {
            if self.test(*id).is_some() {
                b.used -= data.len() + BSEND_OVERHEAD;
                false
            } else {
                true
            }
        });
        self.bsend = b;
    }

    /// Copies `data` into the attached buffer and starts sending the copy to world rank `to`.
    pub fn bsend(&mut self, data: &[u8], to: u32, env: Envelope) -> Result<()> {
        self.reclaim_bsend();
        let Some(cap) = self.bsend.capacity else {
            return Err(Error::new(
                ErrorClass::Buffer,
                "buffered_send: no buffer is attached (use buffer_attach)",
            ));
        };
        let need = data.len() + BSEND_OVERHEAD;
        if self.bsend.used + need > cap {
            return Err(Error::new(
                ErrorClass::Buffer,
                format!(
                    "buffered_send: {} bytes do not fit: {} of {cap} attached bytes in use (each message also takes {BSEND_OVERHEAD})",
                    data.len(),
                    self.bsend.used
                ),
            ));
        }
        let copy: Box<[u8]> = data.into();
        // SAFETY: the copy is owned by `inflight` until its send completes; a boxed slice's
        // heap data does not move when the box does.
        let started =
            unsafe { self.isend(SendMode::Standard, copy.as_ptr(), copy.len(), to, env)? };
        if let Some(id) = started {
            self.bsend.used += need;
            self.bsend.inflight.push((id, copy));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attach_twice_and_detach_without_attach_are_errors() {
        let mut b = BsendBuffer::default();
        assert_eq!(b.detach().unwrap_err().class(), ErrorClass::Buffer);
        b.attach(100).unwrap();
        assert_eq!(b.attach(100).unwrap_err().class(), ErrorClass::Buffer);
        assert!(!b.busy());
        assert_eq!(b.detach().unwrap(), 100);
    }
}
