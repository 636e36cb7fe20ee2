//! The chat a search serves, as the agent runtime reports it.

/// The kind of chat a search serves (OpenClaw's `chatType`): it decides whether citations
/// (`auto`) and QMD hits (`memory.qmd.scope`) are shown.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
pub enum ChatType {
    /// A one-to-one chat with the agent's owner; also the CLI's and the library's default.
    #[default]
    Direct,
    /// A group chat.
    Group,
    /// A channel.
    Channel,
}

impl ChatType {
    /// Parses `direct`, `group` or `channel`.
    pub fn parse(name: &str) -> Option<ChatType> {
        match name {
            "direct" => Some(ChatType::Direct),
            "group" => Some(ChatType::Group),
            "channel" => Some(ChatType::Channel),
            _ => None,
        }
    }

    /// The config spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            ChatType::Direct => "direct",
            ChatType::Group => "group",
            ChatType::Channel => "channel",
        }
    }
}

/// The chat a search serves, as the agent runtime knows it: decides citations (`auto`) and,
/// with the QMD backend, `memory.qmd.scope`. The default is the owner's direct chat.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Chat {
    /// `direct`, `group` or `channel`.
    pub chat_type: ChatType,
    /// The channel (`telegram`, `discord`, …), when known.
    pub channel: Option<String>,
    /// The session key, when known.
    pub session_key: Option<String>,
}
