//! Sessions that are not here: in a fleet, a call for a session whose
//! node is gone, restarted or drained is told so — decided from the id's
//! tag and epoch and the node registry only, so the answer says nothing
//! of whether such a session exists or whose it would be — and an id that
//! names no node that ever registered answers exactly as an unknown one.

use super::App;
use crate::error::ApiError;
use crate::fleet::{Lost, Node, Whereabouts};

impl App {
    /// What a session id that is not open for its caller here means.
    pub async fn whereabouts(&self, id: &str) -> Whereabouts {
        let Some(node) = self.node else {
            return Whereabouts::Unknown;
        };
        let Some((tag, epoch)) = Node::of_id(id) else {
            return Whereabouts::Unknown;
        };
        if tag == node.tag {
            return if epoch == node.epoch {
                Whereabouts::Unknown
            } else {
                Whereabouts::Lost(Lost::NodeRestarted)
            };
        }
        let Some(f) = &self.fleet else {
            return Whereabouts::Unknown;
        };
        match f.whereabouts(tag, epoch).await {
            // The registry says its node is alive: one that died moments
            // ago still has its entry, so its agent port is asked (a node
            // that does not answer is gone).
            Ok((Whereabouts::Elsewhere, Some(agent))) => {
                match crate::fleet::agent::probe(agent).await {
                    crate::fleet::agent::Probe::Refused => Whereabouts::Lost(Lost::NodeLost),
                    _ => Whereabouts::Elsewhere,
                }
            }
            Ok((w, _)) => w,
            // The registry did not answer in time: nothing is concluded,
            // and the call is told to try again (never "unknown", which
            // would end a live session in its client's eyes).
            Err(_) => Whereabouts::Elsewhere,
        }
    }

    /// Makes sure `caller`'s session `id` is here for a call on it: open,
    /// ended with a tombstone (the call learns why), or handed over by its
    /// draining node and adopted now. Otherwise the REST answer of
    /// [`App::missing_session`] (or a lost session's, for one its node
    /// could not hand over).
    pub async fn locate_session(
        &self,
        caller: &crate::callers::Caller,
        id: &str,
    ) -> Result<(), ApiError> {
        if self.sandbox.session_open(&caller.id, id)
            || self.sandbox.session_ended(&caller.id, id).is_some()
        {
            return Ok(());
        }
        match self.adopt_if_handed_over(caller, id).await? {
            super::handover::Adopted::Here => Ok(()),
            super::handover::Adopted::Unmovable => Err(self.unmovable()),
            super::handover::Adopted::Elsewhere => Err(unreachable()),
            super::handover::Adopted::Nothing => Err(self.missing_session(id).await),
        }
    }

    /// The REST answer for a session id not open for its caller here:
    /// `unknown_session` (404), `session_lost` (410, with its `reason`) or
    /// `session_unreachable` (503: its node is alive, the call came here).
    pub async fn missing_session(&self, id: &str) -> ApiError {
        match self.whereabouts(id).await {
            Whereabouts::Unknown => ApiError::new(
                "unknown_session",
                "no session with that id is open for this caller",
            ),
            Whereabouts::Elsewhere => unreachable(),
            Whereabouts::Lost(why) => {
                self.metrics.session_lost(why.as_str());
                let mut e = ApiError::new(
                    "session_lost",
                    "the session's node is gone, restarted or drained: the session ended with it",
                );
                e.reason = Some(why.as_str().to_owned());
                e
            }
        }
    }
}

fn unreachable() -> ApiError {
    ApiError::new(
        "session_unreachable",
        "the session's node is alive but this call reached another; try again",
    )
}
