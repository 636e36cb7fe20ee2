//! `memory.qmd.scope`: in which chats QMD's hits are shown (pure).
//!
//! The schema is `session.sendPolicy`'s. A rule matches when every field of its `match`
//! that is set matches the chat (`chatType`; `channel` without case; `keyPrefix` against the
//! session key). A matching `deny` rule denies at once; otherwise a matching `allow` rule
//! allows; otherwise `default` decides. A caller that names no chat (the CLI, a library
//! call without [`Chat`](crate::config::Chat)) is the owner's direct chat.

use crate::config::{Chat, PolicyAction, PolicyRule, SendPolicy};

/// `Ok` when `policy` shows QMD's hits in `chat`; otherwise why not.
pub(crate) fn check(policy: &SendPolicy, chat: &Chat) -> Result<(), String> {
    let mut allowed = false;
    for (i, rule) in policy.rules.iter().enumerate() {
        if !matches(rule, chat) {
            continue;
        }
        match rule.action {
            PolicyAction::Deny => {
                return Err(format!(
                    "memory.qmd.scope.rules[{i}] denies memory search in this {} chat",
                    chat.chat_type.as_str()
                ))
            }
            PolicyAction::Allow => allowed = true,
        }
    }
    if allowed || policy.default == PolicyAction::Allow {
        Ok(())
    } else {
        Err(format!(
            "memory.qmd.scope denies memory search in this {} chat (default: deny; no rule \
             allows it)",
            chat.chat_type.as_str()
        ))
    }
}

fn matches(rule: &PolicyRule, chat: &Chat) -> bool {
    rule.chat_type.is_none_or(|t| t == chat.chat_type)
        && rule.channel.as_ref().is_none_or(|want| {
            chat.channel
                .as_ref()
                .is_some_and(|c| c.eq_ignore_ascii_case(want))
        })
        && rule.key_prefix.as_ref().is_none_or(|prefix| {
            chat.session_key
                .as_ref()
                .is_some_and(|key| key.starts_with(prefix.as_str()))
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ChatType;

    fn rule(
        action: PolicyAction,
        chat_type: Option<ChatType>,
        channel: Option<&str>,
    ) -> PolicyRule {
        PolicyRule {
            action,
            chat_type,
            channel: channel.map(str::to_string),
            key_prefix: None,
        }
    }

    fn chat(chat_type: ChatType, channel: Option<&str>, key: Option<&str>) -> Chat {
        Chat {
            chat_type,
            channel: channel.map(str::to_string),
            session_key: key.map(str::to_string),
        }
    }

    #[test]
    fn allow_and_deny() {
        use ChatType::*;
        use PolicyAction::*;
        let dm_only = SendPolicy::direct_only();
        let open_but_discord_groups = SendPolicy {
            default: Allow,
            rules: vec![rule(Deny, Some(Group), Some("discord"))],
        };
        let deny_wins = SendPolicy {
            default: Deny,
            rules: vec![rule(Allow, None, None), rule(Deny, Some(Channel), None)],
        };
        let by_key = SendPolicy {
            default: Deny,
            rules: vec![PolicyRule {
                action: Allow,
                chat_type: None,
                channel: None,
                key_prefix: Some("agent:main:".into()),
            }],
        };
        let table: &[(&SendPolicy, Chat, bool)] = &[
            (&dm_only, Chat::default(), true),
            (&dm_only, chat(Direct, Some("telegram"), None), true),
            (&dm_only, chat(Group, None, None), false),
            (&dm_only, chat(Channel, Some("slack"), None), false),
            (
                &open_but_discord_groups,
                chat(Group, Some("Discord"), None),
                false,
            ),
            (
                &open_but_discord_groups,
                chat(Group, Some("telegram"), None),
                true,
            ),
            (&open_but_discord_groups, chat(Group, None, None), true),
            (&deny_wins, chat(Group, None, None), true),
            (&deny_wins, chat(Channel, None, None), false),
            (
                &by_key,
                chat(Group, None, Some("agent:main:telegram:1")),
                true,
            ),
            (&by_key, chat(Group, None, Some("agent:work:1")), false),
            (&by_key, chat(Direct, None, None), false),
        ];
        for (policy, chat, want) in table {
            assert_eq!(
                check(policy, chat).is_ok(),
                *want,
                "{chat:?} under {policy:?}"
            );
        }
        let why = check(&dm_only, &chat(Group, None, None)).unwrap_err();
        assert!(why.contains("group chat"), "{why}");
        let why = check(&deny_wins, &chat(Channel, None, None)).unwrap_err();
        assert!(why.contains("rules[1]"), "{why}");
    }
}
