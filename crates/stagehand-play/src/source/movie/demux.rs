//! Reading a container's packets, for the index, the picture decoder and
//! the sound decoder alike: a fresh packet each read, and one policy for
//! bad packets.
//!
//! FFmpeg's `av_read_frame` writes into the packet it is given without
//! letting go of what that packet held, so reading into one packet again
//! and again keeps every packet read before it (a whole movie at every
//! open, and every packet of the other streams while playing). Each read
//! here takes a new packet; the one before goes when its owner drops it.

use ffmpeg_next as ffmpeg;

/// Bad packets in a row after which a demuxer is taken as stuck and its
/// stream as ended (FFmpeg resyncs past a few).
pub const MAX_INVALID_PACKETS: u32 = 1000;

/// The next packet of stream `stream` in `input`, passing over the other
/// streams' packets and up to [`MAX_INVALID_PACKETS`] bad packets in a
/// row. `Err(Eof)` at the end; any other error is damage the demuxer
/// could not get past.
pub fn next_packet(
    input: &mut ffmpeg::format::context::Input,
    stream: usize,
) -> Result<ffmpeg::Packet, ffmpeg::Error> {
    let mut invalid = 0;
    loop {
        let mut packet = ffmpeg::Packet::empty();
        match packet.read(input) {
            Ok(()) if packet.stream() == stream => return Ok(packet),
            Ok(()) => invalid = 0,
            Err(ffmpeg::Error::InvalidData) if invalid < MAX_INVALID_PACKETS => invalid += 1,
            Err(e) => return Err(e),
        }
    }
}
